package migrate

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// BulkStore is what an import needs of the store: its bulk path (store/pebble).
type BulkStore interface {
	ImportInstallations(ctx context.Context, appID string, buckets int, insts []push.Installation, out []store.ImportOutcome, by []string) error
}

// fpAfterWrite is reached after each durable batch, before a pull saves the cursor that
// follows it: a kill there makes the rerun fetch and write those rows again.
var fpAfterWrite = faultpoint.Define("import/after-write")

// loadBatch is how many valid rows a Loader collects before it writes them: a few of the
// store's chunks, so the store's per-chunk sync is shared by thousands of rows.
const loadBatch = 16384

// Loader validates rows and writes the valid ones in batches, one batch written by a
// goroutine it owns while the next is validated (two cores: validation and Pebble overlap).
// Add rows, then Sync.
type Loader struct {
	st     BulkStore
	app    push.App
	report api.ImportReport
	batch  []push.Installation // being filled
	spare  []push.Installation // the batch written last, reused once its write is done
	// inflight receives the result of the write in flight (nil: none); only Flush and Sync
	// read it, so the report is only touched by the caller's goroutine.
	inflight chan writeResult
	// inactiveBefore: rows updated before it (Unix ms) are past push.InactiveAfter.
	inactiveBefore int64
}

type writeResult struct {
	batch                              []push.Installation
	stored, kept, stale, conflict, bad int
	err                                error
}

// NewLoader returns a loader into app of st.
func NewLoader(st BulkStore, app push.App) *Loader {
	return &Loader{st: st, app: app, batch: make([]push.Installation, 0, loadBatch), spare: make([]push.Installation, 0, loadBatch),
		inactiveBefore: time.Now().Add(-push.InactiveAfter).UnixMilli()}
}

// Report is the report so far: rows added, and the outcomes of the batches written (all of
// them after Sync).
func (l *Loader) Report() *api.ImportReport { return &l.report }

// Pending says how many valid rows wait to be written.
func (l *Loader) Pending() int { return len(l.batch) }

// AddRaw adds one row given as JSON text; n is its position in the input (1-based).
func (l *Loader) AddRaw(ctx context.Context, n int, raw []byte) error {
	obj, perr := api.DecodeImportRow(raw)
	if perr != nil {
		l.report.Rows++
		l.report.Refuse(n, "", perr)
		return nil
	}
	return l.Add(ctx, n, obj)
}

// Add adds one decoded row (modified); it starts writing a batch when one is full.
func (l *Loader) Add(ctx context.Context, n int, obj map[string]any) error {
	l.report.Rows++
	oid, _ := obj["objectId"].(string)
	inst, perr := api.ImportedInstallation(obj)
	if perr != nil {
		l.report.Refuse(n, clip(oid), perr)
		return nil
	}
	if inst.UpdatedAt < l.inactiveBefore {
		l.report.Inactive++
	}
	l.batch = append(l.batch, inst)
	if len(l.batch) >= loadBatch {
		return l.Flush(ctx)
	}
	return nil
}

// Refuse counts a row that could not even be decoded.
func (l *Loader) Refuse(n int, perr *push.Error) {
	l.report.Rows++
	l.report.Refuse(n, "", perr)
}

// Flush waits for the write in flight, then starts writing the rows added since. When it
// returns, every row added before the previous Flush is durable.
func (l *Loader) Flush(ctx context.Context) error {
	if err := l.wait(); err != nil {
		return err
	}
	if len(l.batch) == 0 {
		return nil
	}
	batch := l.batch
	l.batch = l.spare[:0]
	done := make(chan writeResult, 1)
	l.inflight = done
	go func() { done <- l.write(ctx, batch) }()
	return nil
}

// Sync writes every row added so far; on return they are durable.
func (l *Loader) Sync(ctx context.Context) error {
	if err := l.Flush(ctx); err != nil {
		return err
	}
	return l.wait()
}

// abandon waits for the write in flight and drops the rows not written.
func (l *Loader) abandon() {
	_ = l.wait()
	clear(l.batch)
	l.batch = l.batch[:0]
}

// wait waits for the write in flight and counts its outcomes.
func (l *Loader) wait() error {
	if l.inflight == nil {
		return nil
	}
	r := <-l.inflight
	l.inflight = nil
	l.report.Stored += r.stored
	l.report.KeptNewer += r.kept
	l.report.Stale += r.stale
	l.report.Conflicts += r.conflict
	clear(r.batch) // drop the documents
	l.spare = r.batch[:0]
	if r.err != nil {
		return r.err
	}
	if r.bad > 0 {
		return fmt.Errorf("BUG: %d installations got no import outcome", r.bad)
	}
	fpAfterWrite.Hit()
	return nil
}

// write runs on the loader's writing goroutine: it touches only batch and its result.
func (l *Loader) write(ctx context.Context, batch []push.Installation) writeResult {
	r := writeResult{batch: batch}
	out := make([]store.ImportOutcome, len(batch))
	by := make([]string, len(batch))
	if r.err = l.st.ImportInstallations(ctx, l.app.ID, l.app.Settings.Buckets, batch, out, by); r.err != nil {
		return r
	}
	for _, o := range out {
		switch o {
		case store.ImportStored:
			r.stored++
		case store.ImportKeptNewer:
			r.kept++
		case store.ImportStale:
			r.stale++
		case store.ImportConflict:
			r.conflict++
		default:
			r.bad++
		}
	}
	return r
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Importer loads an export sent to the admin API (api.InstallationImporter) into the store.
type Importer struct{ St BulkStore }

// ImportInstallations implements api.InstallationImporter.
func (im Importer) ImportInstallations(ctx context.Context, app push.App, body []byte, format string) (*api.ImportReport, error) {
	f, err := ParseFormat(format)
	if err != nil {
		return nil, err
	}
	l := NewLoader(im.St, app)
	if err := ReadFile(ctx, l, bytes.NewReader(body), "", f, nil); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// A body that is not an export of the format (a bytes.Reader never fails to read).
		return nil, push.Errorf(push.CodeInvalidJSON, "%v", err)
	}
	return l.Report(), nil
}
