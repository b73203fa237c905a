package pebble

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// ScanBuckets over a range of buckets sees exactly the rows, buckets and cursors that Scan
// sees bucket by bucket, with or without a device type, by bucket or by channel, resumed
// after a cursor; and nothing of an app whose id extends this one's. CountSource counts the
// same rows and stops at its limit.
func TestStoreScanBucketsMatchesScan(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	const n = 500
	putBenchInsts(t, s, n)
	// 300 more iOS installations: in each bucket a run of Android rows, then a longer run of
	// iOS ones, so that a narrowed scan skips both ways (seeks forward in its bucket and to
	// the next one).
	for j := range 300 {
		if err := s.PutInstallation(ctx, benchApp, benchBuckets, benchInst(3*(1000+j))); err != nil {
			t.Fatal(err)
		}
	}
	const all = n + 300
	for i := n; i < n+50; i++ { // a neighbour whose rows sort right after benchApp's
		if err := s.PutInstallation(ctx, benchApp+"2", benchBuckets, benchInst(i)); err != nil {
			t.Fatal(err)
		}
	}
	type seen struct {
		bucket int
		oid    string
		cursor string
	}
	oneByOne := func(r store.ScanRange, hi int) []seen {
		var out []seen
		for b := r.Bucket; b < hi; b++ {
			sr := r
			sr.Bucket = b
			if b != r.Bucket {
				sr.After = nil
			}
			if err := s.Scan(ctx, sr, func(row *store.Row) error {
				out = append(out, seen{b, strings.Clone(row.Route.ObjectID), string(row.Cursor)})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, ch := range []string{"", "news"} {
		for _, dt := range []string{"", push.DeviceIOS, push.DeviceAndroid} {
			for _, span := range [][2]int{{0, benchBuckets}, {3, 9}, {15, 16}} {
				r := store.ScanRange{AppID: benchApp, Channel: ch, Bucket: span[0], DeviceType: dt}
				want := oneByOne(r, span[1])
				if len(want) < 5 {
					t.Fatalf("%+v to %d: %d rows, too few to test", r, span[1], len(want))
				}
				for _, after := range []int{-1, 4} {
					name := fmt.Sprintf("channel %q deviceType %q buckets %d-%d after row %d", ch, dt, span[0], span[1]-1, after)
					r := r
					w := want
					if after >= 0 {
						r.After = []byte(want[after].cursor)
						w = want[after+1:]
					}
					var got []seen
					if err := s.ScanBuckets(ctx, r, span[1], func(b int, row *store.Row) error {
						got = append(got, seen{b, strings.Clone(row.Route.ObjectID), string(row.Cursor)})
						return nil
					}); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, w) {
						t.Errorf("%s: ScanBuckets saw %d rows, Scan bucket by bucket %d (first %v / %v)", name, len(got), len(w), got[:min(2, len(got))], w[:min(2, len(w))])
					}
				}
			}
		}
	}
	if err := s.ScanBuckets(ctx, store.ScanRange{AppID: benchApp, Bucket: 5}, 5, nil); err == nil {
		t.Error("an empty bucket range was accepted")
	}
	// One installation alone in channel solo, in bucket b (neither the first nor the last), so
	// that a first range before it is empty while the rest is not.
	solo := benchInst(5000)
	for i := 5001; push.Bucket(solo.Route.ObjectID, benchBuckets) == 0 || push.Bucket(solo.Route.ObjectID, benchBuckets) == benchBuckets-1; i++ {
		solo = benchInst(i)
	}
	solo.Route.Channels = []string{"solo"}
	if err := s.PutInstallation(ctx, benchApp, benchBuckets, solo); err != nil {
		t.Fatal(err)
	}
	b := push.Bucket(solo.Route.ObjectID, benchBuckets)
	for _, c := range []struct {
		channel      string
		lo, mid, hi  int
		limit, count int
		any          bool
	}{
		{"", 0, benchBuckets, benchBuckets, 1000, all + 1, true}, {"", 0, benchBuckets, benchBuckets, 100, 100, true},
		{"news", 0, benchBuckets, benchBuckets, 1000, all, true}, {"nope", 0, benchBuckets, benchBuckets, 1000, 0, false},
		{"nope", 0, 1, benchBuckets, 1000, 0, false},
		{"", 3, 9, benchBuckets, 1000, len(oneByOne(store.ScanRange{AppID: benchApp, Bucket: 3}, 9)), true},
		{"news", 15, 16, 16, 1000, len(oneByOne(store.ScanRange{AppID: benchApp, Channel: "news", Bucket: 15}, 16)), true},
		{"news", 0, 2, 16, 3, 3, true},
		{"solo", 0, b, benchBuckets, 1000, 0, true}, {"solo", 0, b, b, 1000, 0, false},
		{"solo", 0, b + 1, benchBuckets, 1000, 1, true}, {"solo", b, b + 1, b + 1, 1, 1, true},
		{"solo", b + 1, b + 2, benchBuckets, 1000, 0, false},
	} {
		got, any, err := s.CountSource(ctx, benchApp, c.channel, c.lo, c.mid, c.hi, c.limit)
		if err != nil || got != c.count || any != c.any {
			t.Errorf("CountSource(channel %q, buckets %d-%d of %d-%d, limit %d) = %d, %v, %v; want %d, %v", c.channel, c.lo, c.mid-1, c.lo, c.hi-1, c.limit, got, any, err, c.count, c.any)
		}
	}
	for _, r := range [][3]int{{0, 0, 4}, {3, 5, 4}, {0, 4, maxBuckets + 1}, {-1, 2, 4}} {
		if _, _, err := s.CountSource(ctx, benchApp, "", r[0], r[1], r[2], 10); err == nil {
			t.Errorf("CountSource over buckets %d, %d, %d was accepted", r[0], r[1], r[2])
		}
	}
}
