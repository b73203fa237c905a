package push

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestAppendTimeMatchesTimeFormat(t *testing.T) {
	east := time.FixedZone("east", 9*3600+30*60)
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), // past 4 digits: AppendFormat's answer
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 2, 29, 12, 34, 56, 7_000_000, time.UTC),
		time.Date(2026, 11, 23, 8, 5, 9, 123_456_789, east), // converted to UTC, day before
		time.Date(2026, 1, 1, 0, 0, 0, 999_999, time.UTC),   // below a millisecond: .000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(400*365*86400)-100*365*86400, r.Int64N(1e9)).In(east)) // 1870–2270
	}
	for _, tm := range times {
		want := tm.UTC().Format(TimeLayout)
		if got := string(AppendTime([]byte("x"), tm)); got != "x"+want {
			t.Fatalf("AppendTime(%v) = %q, want %q", tm, got, "x"+want)
		}
		if got := FormatTime(tm); got != want {
			t.Fatalf("FormatTime(%v) = %q, want %q", tm, got, want)
		}
	}
}

func BenchmarkFormatTime(b *testing.B) {
	now := time.Now()
	buf := make([]byte, 0, 32)
	b.Run("AppendTime", func(b *testing.B) {
		for b.Loop() {
			buf = AppendTime(buf[:0], now)
		}
	})
	b.Run("AppendFormat", func(b *testing.B) {
		for b.Loop() {
			buf = now.UTC().AppendFormat(buf[:0], TimeLayout)
		}
	})
}
