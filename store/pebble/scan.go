package pebble

import (
	"bytes"
	"context"
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

// Scan implements store.Store. Rows come in key order (deviceType, objectId) within the
// bucket. Row.Route and Row.Doc alias Pebble's buffers and are valid only during fn;
// Row.Cursor stays valid. No allocation per row once the reused Route has grown.
func (s *Store) Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) (err error) {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.exit()
	if r.Bucket < 0 || r.Bucket >= maxBuckets {
		return fmt.Errorf("cannot scan bucket %d of app %s: out of range", r.Bucket, r.AppID)
	}
	var prefix []byte
	if r.Channel == "" {
		prefix = bucketPrefix(make([]byte, 0, 64), r.AppID, r.Bucket)
	} else {
		prefix = channelPrefix(make([]byte, 0, 64), r.AppID, r.Channel, r.Bucket)
	}
	lower, upper := prefix, prefixEnd(prefix)
	if r.DeviceType != "" {
		lower = appendStr(append([]byte(nil), prefix...), r.DeviceType)
		upper = prefixEnd(lower)
	}
	if len(r.After) > 0 {
		after := append(append(append([]byte(nil), prefix...), r.After...), 0)
		if bytes.Compare(after, lower) > 0 {
			lower = after
		}
	}
	if bytes.Compare(lower, upper) >= 0 {
		return nil
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

	var (
		route push.Route
		row   = store.Row{Route: &route}
		slab  []byte
		n     int
	)
	for valid := it.First(); valid; valid = it.Next() {
		if n++; n%scanCtxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("cannot scan bucket %d of app %s: %w", r.Bucket, r.AppID, err)
		}
		used, err := store.DecodeRouteAlias(v, &route)
		if err != nil {
			return fmt.Errorf("cannot decode a row of bucket %d of app %s: %w", r.Bucket, r.AppID, err)
		}
		row.Doc = v[used:]
		c := it.Key()[len(prefix):]
		if cap(slab)-len(slab) < len(c) {
			slab = make([]byte, 0, max(cursorSlabSize, len(c)))
		}
		start := len(slab)
		slab = append(slab, c...)
		row.Cursor = slab[start:len(slab):len(slab)]
		if err := fn(&row); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("cannot scan bucket %d of app %s: %w", r.Bucket, r.AppID, err)
	}
	return nil
}

// CountSource counts the by_bucket rows of app (channel "") or its by_channel rows of channel,
// stopping at limit: fan-out's planner asks it whether a push's source is too small to split
// (fanout.SourceCounter). One iterator over the app's rows in every bucket, keys only.
func (s *Store) CountSource(ctx context.Context, appID, channel string, limit int) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.exit()
	var prefix []byte
	if channel == "" {
		prefix = appendStr(append(make([]byte, 0, 64), tByBucket), appID)
	} else {
		prefix = appendStr(appendStr(append(make([]byte, 0, 64), tByChannel), appID), channel)
	}
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("cannot count the installations of app %s: %w", appID, err)
	}
	n := 0
	for valid := it.First(); valid && n < limit; valid = it.Next() {
		n++
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("cannot count the installations of app %s: %w", appID, err)
	}
	return n, nil
}
