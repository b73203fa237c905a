package embedded

import (
	"log"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/queuetest"
)

var _ queue.Log = (*Log)(nil)

func openDB(t testing.TB, dir string) *pebble.DB {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatalf("pebble.Open: %v", err)
	}
	return db
}

// quietLogger drops Pebble's informational lines; errors still reach the test output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(format string, a ...any) { log.Printf("pebble: "+format, a...) }
func (quietLogger) Fatalf(format string, a ...any) { log.Fatalf("pebble: "+format, a...) }

func testOptions() Options {
	return Options{Partitions: queuetest.Topics, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, TrimInterval: -1}
}

// opened is a Log with the DB under it, closed in order.
type opened struct {
	*Log
	db *pebble.DB
}

func (o *opened) close(t testing.TB) {
	if err := o.Log.Close(); err != nil {
		t.Errorf("Log.Close: %v", err)
	}
	if err := o.db.Close(); err != nil {
		t.Errorf("DB.Close: %v", err)
	}
}

func open(t testing.TB, dir string, opts Options) *opened {
	t.Helper()
	db := openDB(t, dir)
	l, err := Open(db, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return &opened{Log: l, db: db}
}

func newLog(t *testing.T) queue.Log {
	dir := t.TempDir()
	var cur *opened
	var openIt func() queue.Log
	openIt = func() queue.Log {
		cur = open(t, dir, testOptions())
		return queuetest.With(cur.Log, queuetest.Hooks{
			Reopen: func(t *testing.T) queue.Log {
				cur.close(t)
				return openIt()
			},
			Trim: func(t *testing.T) {
				if err := cur.trim(); err != nil {
					t.Fatalf("trim: %v", err)
				}
			},
		})
	}
	l := openIt()
	t.Cleanup(func() { cur.close(t) })
	return l
}

func TestQueueEmbeddedContract(t *testing.T) {
	queuetest.Run(t, newLog)
}
