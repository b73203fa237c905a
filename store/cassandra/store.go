// Package cassandra is the cluster store: a thin mapping of the store layout onto the CLUSTER.md
// schema (schema.cql), one file of CQL per table group. Reads and writes run at LOCAL_QUORUM;
// lightweight transactions (LOCAL_SERIAL) serve req_id claims, id counters, push-record updates
// and a scheduled push's single firing or cancelling. Installation writes are logged batches.
//
// Concurrency: a *Store is safe for concurrent use (gocql sessions are). Atomicity across
// nodes comes from Cassandra: LWT where the contract needs compare-and-set, logged batches where
// it needs all-or-nothing; nothing here relies on in-process locks.
package cassandra

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/gocql/gocql"

	"github.com/pushd/pushd/store"
)

//go:embed schema.cql
var schemaCQL string

// Config configures Open.
type Config struct {
	Hosts    []string      // contact points
	Keyspace string        // default "pushd"
	LocalDC  string        // prefer hosts of this datacenter ("" ⇒ round robin)
	Timeout  time.Duration // per request, default 5s
	Username string
	Password string
}

// RegisterFlags registers the config as flags under prefix.
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.Func(prefix+"hosts", "Cassandra contact points, comma separated", func(v string) error {
		c.Hosts = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&c.Keyspace, prefix+"keyspace", "pushd", "Cassandra keyspace")
	fs.StringVar(&c.LocalDC, prefix+"local-dc", "", "Cassandra local datacenter")
	fs.DurationVar(&c.Timeout, prefix+"timeout", 5*time.Second, "Cassandra request timeout")
	fs.StringVar(&c.Username, prefix+"username", "", "Cassandra user")
	fs.StringVar(&c.Password, prefix+"password", "", "Cassandra password")
}

// Validate reports a config that cannot work.
func (c *Config) Validate() error {
	if len(c.Hosts) == 0 {
		return errors.New("cannot use Cassandra without hosts")
	}
	return nil
}

// Store implements store.Store over a gocql session.
type Store struct {
	s session
}

var _ store.Store = (*Store)(nil)

// Open connects to the cluster. The keyspace and tables must exist (schema.cql; EnsureTables
// creates the tables).
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl := clusterConfig(cfg)
	sess, err := cl.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Cassandra keyspace %s: %w", cl.Keyspace, err)
	}
	return &Store{s: gocqlSession{sess}}, nil
}

// clusterConfig is the driver configuration of cfg: LOCAL_QUORUM, LWTs at LOCAL_SERIAL, and a
// retry on the next host for the statements that may run twice (q turns it off for the others).
func clusterConfig(cfg Config) *gocql.ClusterConfig {
	cl := gocql.NewCluster(cfg.Hosts...)
	cl.Keyspace = cfg.Keyspace
	if cl.Keyspace == "" {
		cl.Keyspace = "pushd"
	}
	cl.Consistency = gocql.LocalQuorum
	cl.SerialConsistency = gocql.LocalSerial
	cl.RetryPolicy = retryPolicy
	cl.Timeout = cfg.Timeout
	if cl.Timeout == 0 {
		cl.Timeout = 5 * time.Second
	}
	if cfg.LocalDC != "" {
		cl.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.DCAwareRoundRobinPolicy(cfg.LocalDC))
	}
	if cfg.Username != "" {
		cl.Authenticator = gocql.PasswordAuthenticator{Username: cfg.Username, Password: cfg.Password}
	}
	return cl
}

// Close closes the session.
func (s *Store) Close() error {
	s.s.Close()
	return nil
}

// SchemaStatements returns the statements of schema.cql; the first creates the keyspace.
func SchemaStatements() []string {
	var code []string // comment lines dropped first: comments may hold ';'
	for _, l := range strings.Split(schemaCQL, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "--") {
			code = append(code, l)
		}
	}
	var out []string
	for _, st := range strings.Split(strings.Join(code, "\n"), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

// EnsureTables creates every table of schema.cql in the session's keyspace.
func (s *Store) EnsureTables(ctx context.Context) error {
	for _, st := range SchemaStatements() {
		if strings.HasPrefix(st, "CREATE KEYSPACE") {
			continue
		}
		if err := s.s.Query(st).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("cannot create table: %w", err)
		}
	}
	return nil
}

// q prepares stmt with args. A statement that must not run twice (retryable) gets no retry
// policy.
func (s *Store) q(ctx context.Context, stmt string, args ...any) query {
	q := s.s.Query(stmt, args...).WithContext(ctx)
	if !retryable(stmt) {
		q = q.RetryPolicy(nil)
	}
	return q
}

// casState is what a read at SERIAL finds after an LWT whose outcome is unknown.
type casState int

const (
	casMine  casState = iota // the LWT's write is there: it applied
	casOther                 // another write decided the row: the LWT did not apply
	casNone                  // neither: the LWT did not apply and nothing decided the row
)

// casCheck reads at SERIAL what an LWT decided; for casOther it may fill prev with the row
// found, as a not-applied LWT does.
type casCheck func(ctx context.Context, prev map[string]any) (casState, error)

// cas runs the lightweight transaction q, filling prev with the row it found when it did not
// apply. An LWT whose outcome is unknown (casUnknown: a timeout may hide an applied write) is
// not run again: check, a read at SERIAL (CLUSTER.md), says whether its write is there. When
// nothing decided the row (casNone), the LWT's error is returned: it failed.
func (s *Store) cas(ctx context.Context, q query, prev map[string]any, check casCheck) (bool, error) {
	ok, err := q.MapScanCAS(prev)
	if err == nil || !casUnknown(err) {
		return ok, err
	}
	if ctx.Err() != nil { // no time left for the read: the outcome stays unknown
		return false, err
	}
	st, rerr := check(ctx, prev)
	switch {
	case rerr != nil:
		return false, fmt.Errorf("%w (and the serial read after it: %v)", err, rerr)
	case st == casMine:
		return true, nil
	case st == casOther:
		return false, nil
	}
	return false, err
}

// serialRow reads the row of stmt at SERIAL into dest, seeing every applied LWT; found is false
// when there is none.
func (s *Store) serialRow(ctx context.Context, stmt string, args []any, dest ...any) (found bool, err error) {
	err = s.q(ctx, stmt, args...).Consistency(serialRead).Scan(dest...)
	if errors.Is(err, gocql.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// serialDocIs is the check of an LWT writing doc into the row of stmt (which selects doc):
// mine if the row holds doc, another's if it holds another document.
func (s *Store) serialDocIs(stmt string, doc []byte, args ...any) casCheck {
	return func(ctx context.Context, _ map[string]any) (casState, error) {
		var got []byte
		found, err := s.serialRow(ctx, stmt, args, &got)
		return stateOf(found, bytes.Equal(got, doc)), err
	}
}

// serialGone is the check of an LWT deleting the row of stmt (read into dest): mine once the
// row is gone (maybe a concurrent delete's: either way it is).
func (s *Store) serialGone(stmt string, args []any, dest ...any) casCheck {
	return func(ctx context.Context, _ map[string]any) (casState, error) {
		found, err := s.serialRow(ctx, stmt, args, dest...)
		if found {
			return casNone, err
		}
		return casMine, err
	}
}

// stateOf is the state of a row found (or not) that is (or is not) the LWT's write.
func stateOf(found, mine bool) casState {
	switch {
	case !found:
		return casNone
	case mine:
		return casMine
	}
	return casOther
}

// notFound maps gocql's not-found to the store sentinel.
func notFound(err error) error {
	if errors.Is(err, gocql.ErrNotFound) {
		return store.ErrNotFound
	}
	return err
}

// maxCASRetries bounds compare-and-set loops; contention past it is reported, not spun on.
const maxCASRetries = 64
