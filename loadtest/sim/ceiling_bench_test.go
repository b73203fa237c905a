//go:build unix

package sim

import (
	"context"
	"testing"
	"time"

	"github.com/pushd/pushd/bench/procstat"
)

// BenchmarkAPNsSimCeiling is the raw HTTP/2 ceiling: one connection, 256 concurrent streams,
// plain net/http + x/net/http2 against the APNs simulator. Sender benchmarks compare to it.
func BenchmarkAPNsSimCeiling(b *testing.B) {
	s, err := NewAPNs(APNsConfig{NoTokenStats: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p8, err := s.NewKey(testKeyID, testTeamID)
	if err != nil {
		b.Fatal(err)
	}
	key, _ := ParseAPNsKey(p8)
	jwt, err := NewAPNsToken(key, testKeyID, testTeamID, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := procstat.CPU(b)
	b.ResetTimer()
	perSec, err := Ceiling(context.Background(), s.URL(), s.ClientTLS(), "bearer "+jwt, b.N, 256)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(perSec, "req/s")
	// CPU per request (client and simulator together) stays meaningful on a shared machine,
	// where req/s depends on what else runs.
	b.ReportMetric(float64((procstat.CPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/req")
	if st := s.Stats(); st.Accepted != int64(b.N) {
		b.Fatalf("accepted %d of %d", st.Accepted, b.N)
	}
}
