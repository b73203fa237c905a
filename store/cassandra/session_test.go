package cassandra

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gocql/gocql"
)

// recSession is a session without a server: it records every statement the store runs, with
// its bound values, consistency and retry policy, and answers it from a script. The cluster's
// defaults are those clusterConfig gives a real session.
type recSession struct {
	t      *testing.T
	answer func(c *call) reply // nil or returning the zero reply: see reply

	mu    sync.Mutex
	calls []*call
}

// call is one statement run (op exec, scan, cas, iter) or one batch (op batch, stmts).
type call struct {
	op       string
	stmt     string
	args     []any
	cons     gocql.Consistency
	serial   gocql.SerialConsistency
	retry    gocql.RetryPolicy
	pageSize int
	batch    []batchStmt
}

type batchStmt struct {
	stmt string
	args []any
}

// reply answers a call. The zero reply: a scan finds no row, an iter no rows, an LWT applies,
// a write succeeds.
type reply struct {
	row    []any   // scan
	rows   [][]any // iter
	notApp bool    // cas: not applied, prev holds the row found
	prev   map[string]any
	err    error
}

func newRecSession(t *testing.T, answer func(c *call) reply) (*recSession, *Store) {
	r := &recSession{t: t, answer: answer}
	return r, &Store{s: r}
}

// stmts lists the statements of the calls since i, batches flattened, for assertions.
func (r *recSession) since(i int) []*call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*call(nil), r.calls[i:]...)
}

func (r *recSession) record(c *call) reply {
	checkBinds(r.t, c.stmt, c.args)
	for _, b := range c.batch {
		checkBinds(r.t, b.stmt, b.args)
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	if r.answer == nil {
		return reply{}
	}
	return r.answer(c)
}

// checkBinds fails the test when stmt has not one value per bind marker.
func checkBinds(t *testing.T, stmt string, args []any) {
	t.Helper()
	if n := strings.Count(stmt, "?"); n != len(args) {
		t.Errorf("%q bound with %d values, has %d markers", stmt, len(args), n)
	}
}

func (r *recSession) Query(stmt string, values ...any) query {
	cfg := clusterConfig(Config{Hosts: []string{"x"}})
	return &recQuery{s: r, c: &call{stmt: stmt, args: values, cons: cfg.Consistency, serial: cfg.SerialConsistency, retry: cfg.RetryPolicy}}
}

func (r *recSession) NewBatch(typ gocql.BatchType) batch {
	if typ != gocql.LoggedBatch {
		r.t.Errorf("batch of type %v, want logged", typ)
	}
	return &recBatch{}
}

func (r *recSession) ExecuteBatch(b batch) error {
	rb := b.(*recBatch)
	// A logged batch runs with the cluster's retry policy, and Cassandra refuses counters in
	// a logged batch: no counter update and no LWT belongs in one.
	for _, st := range rb.stmts {
		if !retryable(st.stmt) {
			r.t.Errorf("%q in a logged batch: counters and LWTs run alone", st.stmt)
		}
	}
	c := &call{op: "batch", batch: rb.stmts, cons: clusterConfig(Config{Hosts: []string{"x"}}).Consistency}
	return r.record(c).err
}

func (r *recSession) Close() {}

type recQuery struct {
	s *recSession
	c *call
}

func (q *recQuery) WithContext(context.Context) query                 { return q }
func (q *recQuery) Consistency(c gocql.Consistency) query             { q.c.cons = c; return q }
func (q *recQuery) SerialConsistency(c gocql.SerialConsistency) query { q.c.serial = c; return q }
func (q *recQuery) PageSize(n int) query                              { q.c.pageSize = n; return q }
func (q *recQuery) RetryPolicy(p gocql.RetryPolicy) query             { q.c.retry = p; return q }

func (q *recQuery) Exec() error {
	q.c.op = "exec"
	return q.s.record(q.c).err
}

func (q *recQuery) Scan(dest ...any) error {
	q.c.op = "scan"
	rp := q.s.record(q.c)
	if rp.err != nil {
		return rp.err
	}
	if rp.row == nil {
		return gocql.ErrNotFound
	}
	assign(q.s.t, q.c.stmt, dest, rp.row)
	return nil
}

func (q *recQuery) MapScanCAS(prev map[string]any) (bool, error) {
	q.c.op = "cas"
	rp := q.s.record(q.c)
	if rp.err != nil {
		return false, rp.err
	}
	for k, v := range rp.prev {
		prev[k] = v
	}
	return !rp.notApp, nil
}

func (q *recQuery) Iter() iter {
	q.c.op = "iter"
	rp := q.s.record(q.c)
	return &recIter{t: q.s.t, stmt: q.c.stmt, rows: rp.rows, err: rp.err}
}

type recIter struct {
	t    *testing.T
	stmt string
	rows [][]any
	err  error
}

func (it *recIter) Scan(dest ...any) bool {
	if it.err != nil || len(it.rows) == 0 {
		return false
	}
	assign(it.t, it.stmt, dest, it.rows[0])
	it.rows = it.rows[1:]
	return true
}

func (it *recIter) Close() error { return it.err }

type recBatch struct{ stmts []batchStmt }

func (b *recBatch) WithContext(context.Context) batch { return b }
func (b *recBatch) Query(stmt string, values ...any) {
	b.stmts = append(b.stmts, batchStmt{stmt, values})
}

// assign stores row into dest as the driver would: one pointer per selected column.
func assign(t *testing.T, stmt string, dest, row []any) {
	t.Helper()
	if len(dest) != len(row) {
		t.Fatalf("%q scanned into %d values, the script gives %d", stmt, len(dest), len(row))
	}
	for i, v := range row {
		d := reflect.ValueOf(dest[i]).Elem()
		if v == nil {
			d.SetZero()
			continue
		}
		rv := reflect.ValueOf(v)
		if !rv.Type().AssignableTo(d.Type()) {
			panic(fmt.Sprintf("%q: column %d: cannot scan a %T into a %s", stmt, i, v, d.Type()))
		}
		d.Set(rv)
	}
}
