package cassandra

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/gocql/gocql"
)

// session is what the store asks of Cassandra: the part of gocql's Session, Query and Batch it
// uses, so that a test can record every statement with its bound values and answer it without
// a server (statements_test.go). Method names and shapes follow gocql; gocqlSession adapts a
// real session.
type session interface {
	Query(stmt string, values ...any) query
	NewBatch(typ gocql.BatchType) batch
	ExecuteBatch(b batch) error
	Close()
}

// query is one statement about to run (gocql.Query's methods the store calls).
type query interface {
	WithContext(ctx context.Context) query
	Consistency(c gocql.Consistency) query
	SerialConsistency(c gocql.SerialConsistency) query
	PageSize(n int) query
	RetryPolicy(p gocql.RetryPolicy) query
	Exec() error
	Scan(dest ...any) error
	MapScanCAS(prev map[string]any) (bool, error)
	Iter() iter
}

// iter reads a statement's rows page by page.
type iter interface {
	Scan(dest ...any) bool
	Close() error
}

// batch gathers the statements of one logged batch.
type batch interface {
	WithContext(ctx context.Context) batch
	Query(stmt string, values ...any)
}

// retryPolicy is the driver's retry policy for statements that may run twice: on an error it
// tries the next host, twice at most (gocql's default is no retry at all, which turns one
// coordinator going down into failed calls). Counter updates and lightweight transactions never
// get it (retryable).
var retryPolicy gocql.RetryPolicy = &gocql.SimpleRetryPolicy{NumRetries: 2}

// counterAdd matches a counter update: SET c = c + ? (or - ?).
var counterAdd = regexp.MustCompile(`SET (\w+) = (\w+) [+-] \?`)

// retryable says whether the driver may run stmt again after an error. Not a counter update: a
// counter is not idempotent, and an update that timed out may have applied, so running it
// again can count twice (CLUSTER.md: counters are added once). Not a lightweight transaction:
// one that timed out may have applied, and run again it would see its own write and report
// "not applied"; the store reads at SERIAL instead (casUnknown). Everything else the store
// writes is an idempotent INSERT, UPDATE of plain columns or DELETE.
func retryable(stmt string) bool {
	if strings.HasPrefix(stmt, "CREATE ") { // schema: IF NOT EXISTS is no LWT
		return true
	}
	if strings.Contains(stmt, " IF ") {
		return false
	}
	if m := counterAdd.FindStringSubmatch(stmt); m != nil && m[1] == m[2] {
		return false
	}
	return true
}

// casUnknown says whether err leaves an LWT's outcome unknown: the coordinator timed out, the
// Paxos round was interrupted, or no answer came back. A read at SERIAL decides then.
func casUnknown(err error) bool {
	var (
		wt *gocql.RequestErrWriteTimeout
		cu *gocql.RequestErrCASWriteUnknown
	)
	return errors.As(err, &wt) || errors.As(err, &cu) ||
		errors.Is(err, gocql.ErrTimeoutNoResponse) || errors.Is(err, gocql.ErrConnectionClosed) ||
		errors.Is(err, context.DeadlineExceeded)
}

// gocqlSession adapts *gocql.Session to session.
type gocqlSession struct{ s *gocql.Session }

func (g gocqlSession) Query(stmt string, values ...any) query {
	return gocqlQuery{g.s.Query(stmt, values...)}
}

func (g gocqlSession) NewBatch(typ gocql.BatchType) batch {
	return gocqlBatch{g.s.NewBatch(typ)}
}

func (g gocqlSession) ExecuteBatch(b batch) error {
	gb, ok := b.(gocqlBatch)
	if !ok {
		panic("BUG: a batch of another session")
	}
	return g.s.ExecuteBatch(gb.b)
}

func (g gocqlSession) Close() { g.s.Close() }

type gocqlQuery struct{ q *gocql.Query }

func (q gocqlQuery) WithContext(ctx context.Context) query { return gocqlQuery{q.q.WithContext(ctx)} }
func (q gocqlQuery) Consistency(c gocql.Consistency) query { return gocqlQuery{q.q.Consistency(c)} }
func (q gocqlQuery) SerialConsistency(c gocql.SerialConsistency) query {
	return gocqlQuery{q.q.SerialConsistency(c)}
}
func (q gocqlQuery) PageSize(n int) query                         { return gocqlQuery{q.q.PageSize(n)} }
func (q gocqlQuery) RetryPolicy(p gocql.RetryPolicy) query        { return gocqlQuery{q.q.RetryPolicy(p)} }
func (q gocqlQuery) Exec() error                                  { return q.q.Exec() }
func (q gocqlQuery) Scan(dest ...any) error                       { return q.q.Scan(dest...) }
func (q gocqlQuery) MapScanCAS(prev map[string]any) (bool, error) { return q.q.MapScanCAS(prev) }
func (q gocqlQuery) Iter() iter                                   { return q.q.Iter() }

type gocqlBatch struct{ b *gocql.Batch }

func (b gocqlBatch) WithContext(ctx context.Context) batch { return gocqlBatch{b.b.WithContext(ctx)} }
func (b gocqlBatch) Query(stmt string, values ...any)      { b.b.Query(stmt, values...) }
