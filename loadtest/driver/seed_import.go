package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/internal/progress"
)

// importBodyMax keeps each import call under the server's 256 KiB body cap.
const importBodyMax = 240 << 10

// importCallsInFlight: the store writes an import call as one batch; two calls keep it busy.
const importCallsInFlight = 2

// importChunks encodes devs as JSON lines (POST /1.1/installations bodies with an objectId,
// which an import row needs: idPrefix and the device's position, set on the device) in bodies
// of at most max bytes; ends[i] is the index in devs after chunk i's last device.
func importChunks(devs []*Device, topic, idPrefix string, max int) (bodies [][]byte, ends []int, err error) {
	var cur []byte
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z") // an import row carries its dates
	for i, d := range devs {
		d.ObjectID = fmt.Sprintf("%s%08d", idPrefix, i)
		body := d.Body(topic)
		body["objectId"] = d.ObjectID
		body["createdAt"], body["updatedAt"] = now, now
		line, err := json.Marshal(body)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot encode installation %d: %w", i, err)
		}
		if len(cur) > 0 && len(cur)+len(line)+1 > max {
			bodies, ends = append(bodies, cur), append(ends, i)
			cur = nil
		}
		cur = append(append(cur, line...), '\n')
	}
	if len(cur) > 0 {
		bodies, ends = append(bodies, cur), append(ends, len(devs))
	}
	return bodies, ends, nil
}

// seedImport creates devs through the bulk import (POST /admin/apps/<id>/installations/import,
// JSON lines): the store's batch path, far faster than one upsert per installation. The
// driver names their objectIds (lt<run id><position>).
func (r *run) seedImport(ctx context.Context, devs []*Device) (int, float64, error) {
	bodies, ends, err := importChunks(devs, r.cfg.Topic, "lt"+r.id, importBodyMax)
	if err != nil {
		return 0, 0, err
	}
	path := "/admin/apps/" + r.rep.AppID + "/installations/import?format=jsonl"
	var next, done atomic.Int64
	start := time.Now()
	meter := &progress.Meter{W: r.out, Label: "  importing", Unit: "installations", Interval: r.cfg.ProgressEvery, Total: int64(len(devs))}
	if r.cfg.Terminal != nil {
		meter.W, meter.Terminal = r.cfg.Terminal, true
	}
	g, gctx := errgroup.WithContext(ctx)
	for range min(importCallsInFlight, len(bodies)) {
		g.Go(func() error {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(bodies)) || gctx.Err() != nil {
					return nil
				}
				lo := 0
				if i > 0 {
					lo = ends[i-1]
				}
				want := ends[i] - lo
				var rep struct {
					Rows, Stored, Refused int
					Reasons               map[string]int
				}
				if _, err := r.api.do(gctx, http.MethodPost, path, authAdmin, bodies[i], &rep); err != nil {
					return fmt.Errorf("cannot import installations %d-%d: %w", lo, ends[i]-1, err)
				}
				if rep.Rows != want || rep.Stored != want {
					return fmt.Errorf("cannot import installations %d-%d: %d rows read, %d stored, %d refused (%v), want %d stored",
						lo, ends[i]-1, rep.Rows, rep.Stored, rep.Refused, rep.Reasons, want)
				}
				n := done.Add(int64(want))
				meter.Update(n, n)
			}
		})
	}
	err = g.Wait()
	if meter.Terminal {
		n := done.Load()
		meter.Done(n, n)
	}
	return int(done.Load()), time.Since(start).Seconds(), err
}
