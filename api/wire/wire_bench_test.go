package wire

import "testing"

func BenchmarkWireDecodePush(b *testing.B) {
	body := []byte(fuzzSeeds[4])
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, perr := DecodePush(body, cn, "", testNow); perr != nil {
			b.Fatal(perr)
		}
	}
}
