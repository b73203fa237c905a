package limit

import (
	"context"
	"testing"

	"github.com/pushd/pushd/store/pebble"
)

// BenchmarkLimitAllowPebble is Allow over the store's shared counts (a reservation of 64
// calls per store write at this limit); compare with BenchmarkLimitAllow (process memory).
func BenchmarkLimitAllowPebble(b *testing.B) {
	st, err := pebble.Open(b.TempDir(), pebble.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	l := New(st, nil, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if ok, _, err := l.Allow(context.Background(), "app", 1<<30); !ok || err != nil {
				b.Fatalf("refused: %v", err)
			}
		}
	})
}
