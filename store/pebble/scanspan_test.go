package pebble

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestStoreScanRowsInline guards the span policy of Open: the rows fan-out scans (by_bucket,
// by_channel) keep their documents in the tables, so a scan reads no blob file, while the
// primary rows of the same installations (documents of ~300 bytes, over valueSeparationMin)
// still go to blob files: the test would pass without value separation at all otherwise.
func TestStoreScanRowsInline(t *testing.T) {
	s := openTest(t)
	const n = 2000
	putBenchInsts(t, s, n)
	flushAndCompact(t, s)
	separated := func(lower, upper []byte) (rows, inBlob uint64) {
		t.Helper()
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
		if err != nil {
			t.Fatal(err)
		}
		for valid := it.First(); valid; valid = it.Next() {
			if _, err := it.ValueAndErr(); err != nil {
				t.Fatal(err)
			}
			rows++
		}
		st := it.Stats()
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		return rows, st.InternalStats.SeparatedPointValue.Count
	}
	inst := []byte{tInst}
	if rows, blob := separated(inst, prefixEnd(inst)); rows != n || blob == 0 {
		t.Fatalf("primary rows: %d read, %d from blob files; want %d read, most from blob files (value separation on)", rows, blob, n)
	}
	var scanned uint64
	for b := range benchBuckets {
		p := bucketPrefix(nil, benchApp, b)
		rows, blob := separated(p, prefixEnd(p))
		if blob != 0 {
			t.Errorf("bucket %d: %d of %d by_bucket rows read from blob files; want none", b, blob, rows)
		}
		scanned += rows
		p = channelPrefix(nil, benchApp, "news", b)
		rows, blob = separated(p, prefixEnd(p))
		if blob != 0 {
			t.Errorf("channel news, bucket %d: %d of %d by_channel rows read from blob files; want none", b, blob, rows)
		}
	}
	if scanned != n {
		t.Fatalf("scanned %d by_bucket rows, want %d", scanned, n)
	}
}
