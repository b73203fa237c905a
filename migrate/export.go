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

// Export writes every installation of app as JSON lines, each the stored document (with
// objectId, createdAt and updatedAt), in bucket order. pushd import reads the file back.
func Export(ctx context.Context, st Scanner, app push.App, w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	for b := 0; b < app.Settings.Buckets; b++ {
		err := st.Scan(ctx, store.ScanRange{AppID: app.ID, Bucket: b}, func(r *store.Row) error {
			n++
			if _, err := bw.Write(r.Doc); err != nil {
				return err
			}
			return bw.WriteByte('\n')
		})
		if err != nil {
			return n, fmt.Errorf("cannot export bucket %d of app %s: %w", b, app.ID, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("cannot export app %s: %w", app.ID, err)
	}
	return n, nil
}
