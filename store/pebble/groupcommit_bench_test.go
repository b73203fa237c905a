package pebble

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkStorePebbleGroupCommit answers issue 16 item 6's question whether the intake
// needs a group committer of its own: writers commit synced batches the size of a push
// record's at once (as concurrent API requests do), on the real disk, and the benchmark
// reports WAL fsyncs per commit. Pebble's commit pipeline already groups them: a commit
// that finds a sync in progress waits for the next one, which covers every batch written
// meanwhile, so with many writers fsyncs/commit falls well below 1 while each commit still
// returns only once its batch is durable.
func BenchmarkStorePebbleGroupCommit(b *testing.B) {
	for _, writers := range []int{1, 16, 128} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			var syncs atomic.Int64
			db, err := pebble.Open(b.TempDir(), &pebble.Options{FS: syncCountFS{FS: vfs.Default, syncs: &syncs}, Logger: pebbleLogger{}})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			value := make([]byte, 900) // about a push record with its job
			var next atomic.Int64
			base := syncs.Load()
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var key []byte
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						key = strconv.AppendInt(append(key[:0], "n/"...), i, 10)
						batch := db.NewBatch()
						_ = batch.Set(key, value, nil)
						if err := batch.Commit(pebble.Sync); err != nil {
							b.Error(err)
						}
						_ = batch.Close()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(syncs.Load()-base)/float64(b.N), "fsyncs/commit")
		})
	}
}
