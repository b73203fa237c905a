package limit

import (
	"context"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLimitBlocksForAMinuteThenAdmits(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 5, 0, time.UTC)}
	set := metrics.NewSet()
	l := New(nil, c.now, set)
	for i := 0; i < 3; i++ {
		if ok, _ := allow(t, l, "a", 3); !ok {
			t.Fatalf("call %d refused under the limit", i)
		}
	}
	ok, wait := allow(t, l, "a", 3)
	if ok || wait != Block {
		t.Fatalf("4th call: got ok=%v wait=%v, want refused for %v", ok, wait, Block)
	}
	// Another app is not affected.
	if ok, _ := allow(t, l, "b", 3); !ok {
		t.Fatal("app b refused because of app a")
	}
	// A new calendar minute does not lift the block: it lasts a full minute.
	c.t = c.t.Add(58 * time.Second)
	if ok, wait := allow(t, l, "a", 3); ok || wait != 2*time.Second {
		t.Fatalf("during the block: got ok=%v wait=%v, want refused with 2s left", ok, wait)
	}
	c.t = c.t.Add(2 * time.Second)
	if ok, _ := allow(t, l, "a", 3); !ok {
		t.Fatal("after the block minute: refused, want admitted")
	}
	if got := set.GetOrCreateCounter(`pushd_api_push_calls_total{decision="refused"}`).Get(); got != 2 {
		t.Fatalf("refused counter = %d, want 2", got)
	}
}

func TestLimitCountsPerCalendarMinute(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 10, 0, 59, 0, time.UTC)}
	l := New(nil, c.now, nil)
	for i := 0; i < 2; i++ {
		if ok, _ := allow(t, l, "a", 2); !ok {
			t.Fatalf("call %d refused", i)
		}
	}
	c.t = c.t.Add(time.Second) // next minute: the count starts again
	for i := 0; i < 2; i++ {
		if ok, _ := allow(t, l, "a", 2); !ok {
			t.Fatalf("call %d of the next minute refused", i)
		}
	}
	if ok, _ := allow(t, l, "a", 2); ok {
		t.Fatal("third call of the minute admitted over a limit of 2")
	}
}

func BenchmarkLimitAllow(b *testing.B) {
	l := New(nil, nil, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _, _ = l.Allow(context.Background(), "app", 1<<30)
		}
	})
}

func allow(t *testing.T, l *Limiter, app string, perMinute int) (bool, time.Duration) {
	t.Helper()
	ok, wait, err := l.Allow(context.Background(), app, perMinute)
	if err != nil {
		t.Fatal(err)
	}
	return ok, wait
}
