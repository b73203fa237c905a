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
	s *gocql.Session
}

var _ store.Store = (*Store)(nil)

// Open connects to the cluster. The keyspace and tables must exist (schema.cql; EnsureTables
// creates the tables).
func Open(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cl := gocql.NewCluster(cfg.Hosts...)
	cl.Keyspace = cfg.Keyspace
	if cl.Keyspace == "" {
		cl.Keyspace = "pushd"
	}
	cl.Consistency = gocql.LocalQuorum
	cl.SerialConsistency = gocql.LocalSerial
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
	sess, err := cl.CreateSession()
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Cassandra keyspace %s: %w", cl.Keyspace, err)
	}
	return &Store{s: sess}, nil
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

func (s *Store) q(ctx context.Context, stmt string, args ...any) *gocql.Query {
	return s.s.Query(stmt, args...).WithContext(ctx)
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
