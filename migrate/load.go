package migrate

import (
	"context"
	"fmt"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// BulkStore is what an import needs of the store: its bulk path (store/pebble).
type BulkStore interface {
	ImportInstallations(ctx context.Context, appID string, buckets int, insts []push.Installation, out []store.ImportOutcome, by []string) error
}

// loadBatch is how many valid rows a Loader collects before it writes them: a few of the
// store's chunks, so the store's per-chunk sync is shared by thousands of rows.
const loadBatch = 16384

// Loader validates rows and writes the valid ones in batches. Add rows, then Flush.
type Loader struct {
	st      BulkStore
	app     push.App
	report  api.ImportReport
	batch   []push.Installation
	out     []store.ImportOutcome
	by      []string
	written int // rows written so far (Flush adds a batch)
}

// NewLoader returns a loader into app of st.
func NewLoader(st BulkStore, app push.App) *Loader {
	return &Loader{st: st, app: app, batch: make([]push.Installation, 0, loadBatch),
		out: make([]store.ImportOutcome, loadBatch), by: make([]string, loadBatch)}
}

// Report is the report so far (after Flush, of every row added).
func (l *Loader) Report() *api.ImportReport { return &l.report }

// Pending says how many valid rows wait for a write.
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

// Add adds one decoded row (modified); it writes a batch when one is full.
func (l *Loader) Add(ctx context.Context, n int, obj map[string]any) error {
	l.report.Rows++
	oid, _ := obj["objectId"].(string)
	inst, perr := api.ImportedInstallation(obj)
	if perr != nil {
		l.report.Refuse(n, clip(oid), perr)
		return nil
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

// Flush writes the rows added since the last Flush; on return they are durable.
func (l *Loader) Flush(ctx context.Context) error {
	if len(l.batch) == 0 {
		return nil
	}
	n := len(l.batch)
	out, by := l.out[:n], l.by[:n]
	if err := l.st.ImportInstallations(ctx, l.app.ID, l.app.Settings.Buckets, l.batch, out, by); err != nil {
		return err
	}
	for i, o := range out {
		switch o {
		case store.ImportStored:
			l.report.Stored++
		case store.ImportKeptNewer:
			l.report.KeptNewer++
		case store.ImportStale:
			l.report.Stale++
		case store.ImportConflict:
			l.report.Conflicts++
		default:
			return fmt.Errorf("BUG: no import outcome for installation %s", l.batch[i].ObjectID)
		}
	}
	l.written += n
	clear(l.batch) // drop the documents
	l.batch = l.batch[:0]
	return nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
