package migrate

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Scanner is what an export needs of the store: the bucket scan.
type Scanner interface {
	Scan(ctx context.Context, r store.ScanRange, fn func(*store.Row) error) error
}

// exportProgressRows is how often (in rows) Export reports within a bucket: a bucket of a
// large app holds millions of rows, and a report per row would cost a clock read each.
const exportProgressRows = 4096

// Export writes every installation of app as JSON lines, each the stored document (with
// objectId, createdAt and updatedAt), in bucket order. pushd import reads the file back.
// progress, if not nil, is told the rows written and the buckets finished of
// app.Settings.Buckets, every exportProgressRows rows and after each bucket.
func Export(ctx context.Context, st Scanner, app push.App, w io.Writer, progress func(rows, buckets int)) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	for b := 0; b < app.Settings.Buckets; b++ {
		err := st.Scan(ctx, store.ScanRange{AppID: app.ID, Bucket: b}, func(r *store.Row) error {
			n++
			if progress != nil && n%exportProgressRows == 0 {
				progress(n, b)
			}
			if _, err := bw.Write(r.Doc); err != nil {
				return err
			}
			return bw.WriteByte('\n')
		})
		if err != nil {
			return n, fmt.Errorf("cannot export bucket %d of app %s: %w", b, app.ID, err)
		}
		if progress != nil {
			progress(n, b+1)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("cannot export app %s: %w", app.ID, err)
	}
	return n, nil
}
