// Package jointaccept writes an accepted push whole, in one synced commit, where the embedded
// store and the embedded log share a Pebble database (pushd serve's default): the push's record,
// the claim of its req_id, and its job in the log's jobs topic. Nothing of the push survives a
// crash before that commit, and everything after it; so the record holds no copy of the job for
// a re-driver (push.Notification.PendingJob), and no pending-jobs row is written or deleted.
//
// It is the one place that knows both store/pebble and queue/embedded: api/pushapi sees it as
// a pushapi.JointAccepter.
package jointaccept

import (
	"context"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store"
	pstore "github.com/pushd/pushd/store/pebble"
)

// Writer is a pushapi.JointAccepter over a store and a log on the same database.
type Writer struct {
	st  *pstore.Store
	log *embedded.Log
}

// New returns the Writer of st and lg, which must be open on st.DB().
func New(st *pstore.Store, lg *embedded.Log) (*Writer, error) {
	if st == nil || lg == nil {
		return nil, errors.New("a joint accept needs the embedded store and log")
	}
	return &Writer{st: st, log: lg}, nil
}

// AcceptJoint writes n (an objectId just generated), the claim of its req_id when it has one,
// and rec appended to topic, in one synced commit. A live claim of another call wins: it is
// returned with claimed false, and nothing is written. Without a req_id, claimed is true.
func (w *Writer) AcceptJoint(ctx context.Context, n push.Notification, ttl time.Duration, topic string, rec queue.Record) (prev store.ReqClaim, claimed bool, err error) {
	p, err := w.log.Prepare(topic, rec)
	if err != nil {
		return store.ReqClaim{}, false, err
	}
	defer p.Done() // a gap in the partition when the record was not written
	return w.st.CreateNotificationWith(ctx, n, ttl, func(b *pebble.Batch) { p.Write(b) })
}
