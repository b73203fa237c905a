package fanout

import (
	"context"
	"fmt"
	"time"

	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
)

// Count scans buckets [lo, hi) of an app exactly as a worker's scan does (by_channel when
// channel is set, then the residual filter: invalid and inactive installations skipped, q
// evaluated on the route and, only when q needs it, the document) and says how many rows it
// read and how many matched. q must be resolved if it has sub-queries. Benchmarks use it to
// measure the scan+filter path alone. A push's dry run uses Audience, which adds the
// planner's split (point ids, a channel's index), sub-queries, dead tokens and routing.
func Count(ctx context.Context, s Scanner, appID, channel string, lo, hi int, q *query.Query, now time.Time) (rows, matched int64, err error) {
	f := newFilter(q, now)
	dt := q.Hints().DeviceType
	for b := lo; b < hi; b++ {
		err := s.Scan(ctx, store.ScanRange{AppID: appID, Channel: channel, Bucket: b, DeviceType: dt}, func(r *store.Row) error {
			rows++
			if f.keep(r.Route, r.Doc) {
				matched++
			}
			return nil
		})
		if err != nil {
			return rows, matched, fmt.Errorf("cannot count bucket %d of app %s: %w", b, appID, err)
		}
	}
	return rows, matched, nil
}
