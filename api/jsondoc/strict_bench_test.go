package jsondoc

import "testing"

// BenchmarkJSONDocCheckStrict is the strict pass every installation and push body now takes
// beside its decode (compare BenchmarkJSONDocDecode/jsondoc on the same document).
func BenchmarkJSONDocCheckStrict(b *testing.B) {
	in := []byte(installationDoc)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if err := CheckStrict(in, StrictMaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}
