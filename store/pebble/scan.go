package pebble

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// scanCtxEvery is how many rows pass between checks of ctx: often enough to stop within a
// fraction of a millisecond, rarely enough to cost nothing per row.
const scanCtxEvery = 256

// cursorSlabSize is the arena cursors are cut from: one allocation serves hundreds of rows,
// and a cursor stays valid after the callback (fan-out keeps the last one as its checkpoint).
const cursorSlabSize = 16 << 10

// cursorSlabFirst is a scan's first slab: the next ones double up to cursorSlabSize.
const cursorSlabFirst = 256

// Scan implements store.Store. Rows come in key order (deviceType, objectId) within the
// bucket. Row.Route and Row.Doc alias Pebble's buffers and are valid only during fn;
// Row.Cursor stays valid. No allocation per row once the reused Route has grown.
func (s *Store) Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error {
	return s.ScanBuckets(ctx, r, r.Bucket+1, func(_ int, row *store.Row) error { return fn(row) })
}

// ScanBuckets scans buckets r.Bucket to hi-1 in order as Scan scans one (r.After applies to
// the first), with one iterator: fan-out's task over many buckets of a small app met a
// bucket or two of rows per iterator, and building 256 of them cost more than the rows
// (fanout.BucketsScanner). fn is told each row's bucket.
//
// The buckets' rows are one contiguous key range, walked once. A device type narrows it by
// key: rows of other device types are stepped over without reading their values, and a run
// of skipSeekAfter of them within one bucket is jumped with a seek to the device type's rows in
// this bucket or the next. A small app has a few rows per bucket and pays no seek; a large one
// jumps over the other device types' rows. A narrowed scan that found no row is remembered
// until the app's index rows are written again (absence), and comes back empty at once.
func (s *Store) ScanBuckets(ctx context.Context, r store.ScanRange, hi int, fn func(bucket int, row *store.Row) error) (err error) {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if r.Bucket < 0 || hi > maxBuckets || r.Bucket >= hi {
		return fmt.Errorf("cannot scan buckets %d to %d of app %s: out of range", r.Bucket, hi-1, r.AppID)
	}
	first := sourcePrefix(make([]byte, 0, 64), r.AppID, r.Channel, r.Bucket)
	plen := len(first) // every bucket's prefix has the same length
	var dt []byte      // the device type's key component, nil for all
	if r.DeviceType != "" {
		dt = appendStr(nil, r.DeviceType)
	}
	lower := append(append([]byte(nil), first...), dt...)
	if len(r.After) > 0 {
		after := append(append(append([]byte(nil), first...), r.After...), 0)
		if bytes.Compare(after, lower) > 0 {
			lower = after
		}
	}
	upper := prefixEnd(sourcePrefix(nil, r.AppID, r.Channel, hi-1))
	if dt != nil && hi-1 == r.Bucket {
		upper = prefixEnd(append(append([]byte(nil), first...), dt...))
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil
	}
	var (
		absent absentScan // what remembering an empty narrowed scan needs (absence)
		akey   = absenceKey{channel: r.Channel, deviceType: r.DeviceType, lo: r.Bucket, hi: hi}
		found  bool
	)
	if dt != nil {
		// Looked up before the iterator takes its snapshot.
		var known bool
		if known, absent = s.absence.look(r.AppID, akey); known {
			return nil
		}
		if len(r.After) > 0 {
			absent = absentScan{} // a resumed scan covers part of the range only
		}
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("cannot scan bucket %d of app %s: %w", r.Bucket, r.AppID, err)
	}
	defer func() {
		if cerr := it.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot scan bucket %d of app %s: %w", r.Bucket, r.AppID, cerr)
		}
	}()
	if s.afterScanOpen != nil {
		s.afterScanOpen()
	}
	var (
		route push.Route
		row   = store.Row{Route: &route}
		slab  []byte
		n     int
		miss  int // rows of another device type in a row, in bucket cur
		cur   = -1
		seek  []byte // scratch for skip seeks
	)
	for valid := it.First(); valid; {
		if n++; n%scanCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k := it.Key()
		b := int(binary.BigEndian.Uint16(k[plen-2 : plen]))
		c := k[plen:]
		if dt != nil && !bytes.HasPrefix(c, dt) {
			if b != cur {
				// A run that crosses buckets is cut: the seek skips the rest of one bucket's
				// run only, and in a small app's buckets (a few rows each) it skipped nothing
				// and cost as much as the steps it replaced.
				cur, miss = b, 0
			}
			if miss++; miss < skipSeekAfter {
				valid = it.Next()
				continue
			}
			miss = 0
			if bytes.Compare(c, dt) > 0 { // past this bucket's rows of the device type
				if b+1 >= hi {
					break
				}
				b++
			}
			seek = append(sourcePrefix(seek[:0], r.AppID, r.Channel, b), dt...)
			valid = it.SeekGE(seek)
			continue
		}
		miss = 0
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("cannot scan bucket %d of app %s: %w", b, r.AppID, err)
		}
		used, err := store.DecodeRouteAlias(v, &route)
		if err != nil {
			return fmt.Errorf("cannot decode a row of bucket %d of app %s: %w", b, r.AppID, err)
		}
		row.Doc = v[used:]
		if cap(slab)-len(slab) < len(c) {
			// Small first: most scans of a small app's bucket see a row or two, and a
			// slab per bucket of a 256-bucket task took 4 MB for a few hundred rows.
			slab = make([]byte, 0, max(min(cursorSlabSize, 2*cap(slab)+cursorSlabFirst), len(c)))
		}
		start := len(slab)
		slab = append(slab, c...)
		row.Cursor = slab[start:len(slab):len(slab)]
		found = true
		if err := fn(b, &row); err != nil {
			return err
		}
		valid = it.Next()
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("cannot scan buckets %d to %d of app %s: %w", r.Bucket, hi-1, r.AppID, err)
	}
	if !found {
		s.absence.remember(akey, absent)
	}
	return nil
}

// skipSeekAfter is how many rows of another device type a narrowed scan steps over in one
// bucket before it seeks past the rest of them: a seek costs about as much as that many steps.
const skipSeekAfter = 16

// KnownEmpty says whether ScanBuckets of app's source (by_bucket rows, channel "", or
// channel's by_channel rows), buckets lo to hi-1 narrowed to deviceType, is remembered to find
// no row (absence.go), so that the planner plans such a push no task (fanout.AbsenceKnower).
// It reads memory only: false may mean not known.
func (s *Store) KnownEmpty(appID, channel, deviceType string, lo, hi int) bool {
	return deviceType != "" && s.absence.known(appID, absenceKey{channel: channel, deviceType: deviceType, lo: lo, hi: hi})
}

// CountSource counts the by_bucket rows of app (channel "") or its by_channel rows of channel
// in buckets lo to mid-1, stopping at limit, and says whether buckets lo to hi-1 hold any row:
// fan-out's planner sizes a push's tasks by the first and plans none when the second is false
// (fanout.SourceCounter). One iterator, keys only: when the first range holds no row, the
// seek that found that out has found the rest's first row too.
func (s *Store) CountSource(ctx context.Context, appID, channel string, lo, mid, hi, limit int) (n int, any bool, err error) {
	if err := s.enter(); err != nil {
		return 0, false, err
	}
	defer s.exit()
	if lo < 0 || hi > maxBuckets || lo >= mid || mid > hi {
		return 0, false, fmt.Errorf("cannot count buckets %d to %d (first range to %d) of app %s: out of range", lo, hi-1, mid-1, appID)
	}
	lower, upper := sourcePrefix(nil, appID, channel, lo), prefixEnd(sourcePrefix(nil, appID, channel, hi-1))
	firstEnd := upper
	if mid < hi {
		firstEnd = sourcePrefix(nil, appID, channel, mid)
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, false, fmt.Errorf("cannot count the installations of app %s: %w", appID, err)
	}
	valid := it.First()
	any = valid
	for ; valid && n < limit && bytes.Compare(it.Key(), firstEnd) < 0; valid = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, false, fmt.Errorf("cannot count the installations of app %s: %w", appID, err)
	}
	return n, any, nil
}
