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

// BenchmarkWireDecodePushCommon decodes the common shape: an alert to a channel, no
// per-platform objects.
func BenchmarkWireDecodePushCommon(b *testing.B) {
	body := []byte(`{"data":{"alert":"Sale starts now","title":"Shop","badge":1},"channels":["deals"],"expiration_interval":3600}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, perr := DecodePush(body, cn, "", testNow); perr != nil {
			b.Fatal(perr)
		}
	}
}
