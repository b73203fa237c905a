package cassandra

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/storetest"
)

// TestStoreCassandraContract runs the store contract suite against a real cluster named by
// PUSHD_CASSANDRA_HOSTS (comma separated), in keyspace PUSHD_CASSANDRA_KEYSPACE (default
// pushd_test). The keyspace is created as schema.cql creates pushd (replication factor 3, or
// PUSHD_CASSANDRA_RF for a smaller test cluster), then the tables with EnsureTables, as
// deploy/README.md tells operators. PUSHD_CASSANDRA_LOCAL_DC, _USERNAME and _PASSWORD are read
// as pushd reads them.
func TestStoreCassandraContract(t *testing.T) {
	hosts := os.Getenv("PUSHD_CASSANDRA_HOSTS")
	if hosts == "" {
		t.Skip("PUSHD_CASSANDRA_HOSTS is not set: skipping the Cassandra store contract suite (set it to a cluster's contact points to run it)")
	}
	cfg := Config{
		Hosts:    strings.Split(hosts, ","),
		Keyspace: os.Getenv("PUSHD_CASSANDRA_KEYSPACE"),
		LocalDC:  os.Getenv("PUSHD_CASSANDRA_LOCAL_DC"),
		Username: os.Getenv("PUSHD_CASSANDRA_USERNAME"),
		Password: os.Getenv("PUSHD_CASSANDRA_PASSWORD"),
		Timeout:  30 * time.Second,
	}
	if cfg.Keyspace == "" {
		cfg.Keyspace = "pushd_test"
	}
	ksStmt, err := keyspaceStatement(cfg.Keyspace, os.Getenv("PUSHD_CASSANDRA_RF"))
	if err != nil {
		t.Fatal(err)
	}
	cl := clusterConfig(cfg)
	cl.Keyspace = "" // it may not exist yet
	sess, err := cl.CreateSession()
	if err != nil {
		t.Fatalf("cannot connect to %s: %v", hosts, err)
	}
	err = sess.Query(ksStmt).Exec()
	sess.Close()
	if err != nil {
		t.Fatalf("cannot create keyspace %s: %v", cfg.Keyspace, err)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.EnsureTables(context.Background()); err != nil {
		t.Fatal(err)
	}
	// One session serves every subtest: the suite uses ids unique to the run.
	storetest.Run(t, func(t *testing.T) store.Store { return s })
}

// keyspaceStatement is schema.cql's CREATE KEYSPACE for keyspace ks, with replication factor
// rf when it is not "".
func keyspaceStatement(ks, rf string) (string, error) {
	st := SchemaStatements()[0]
	const name, factor = "CREATE KEYSPACE IF NOT EXISTS pushd\n", "'replication_factor': 3"
	if !strings.HasPrefix(st, name) || !strings.Contains(st, factor) {
		return "", fmt.Errorf("schema.cql's first statement is not the keyspace pushd of replication factor 3: %.80q", st)
	}
	st = "CREATE KEYSPACE IF NOT EXISTS " + ks + "\n" + st[len(name):]
	if rf != "" {
		if n, err := strconv.Atoi(rf); err != nil || n < 1 {
			return "", fmt.Errorf("cannot use PUSHD_CASSANDRA_RF=%q: want a positive number", rf)
		}
		st = strings.Replace(st, factor, "'replication_factor': "+rf, 1)
	}
	return st, nil
}

func TestStoreCassandraKeyspaceStatement(t *testing.T) {
	got, err := keyspaceStatement("pushd_test", "1")
	want := "CREATE KEYSPACE IF NOT EXISTS pushd_test\n  WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
	if err != nil || got != want {
		t.Errorf("keyspaceStatement = %q, %v; want %q", got, err, want)
	}
	if got, _ := keyspaceStatement("k", ""); !strings.Contains(got, "'replication_factor': 3") {
		t.Errorf("without PUSHD_CASSANDRA_RF: %q, want schema.cql's factor", got)
	}
	if _, err := keyspaceStatement("k", "zero"); err == nil {
		t.Error("a bad PUSHD_CASSANDRA_RF was accepted")
	}
}

func TestStoreCassandraSchemaDeployed(t *testing.T) {
	deployed, err := os.ReadFile("../../deploy/cassandra/schema.cql")
	if err != nil {
		t.Fatal(err)
	}
	if string(deployed) != schemaCQL {
		t.Fatal("deploy/cassandra/schema.cql differs from store/cassandra/schema.cql: copy the latter over the former")
	}
	stmts := SchemaStatements()
	if !strings.HasPrefix(stmts[0], "CREATE KEYSPACE") {
		t.Errorf("first statement = %.40q, want the keyspace", stmts[0])
	}
	tables := map[string]bool{}
	for _, st := range stmts[1:] {
		f := strings.Fields(st)
		if len(f) < 6 || f[0] != "CREATE" || f[1] != "TABLE" {
			t.Errorf("unexpected statement %.60q", st)
			continue
		}
		tables[f[5]] = true
	}
	for _, want := range []string{"apps", "installations", "installations_by_bucket", "installations_by_channel",
		"installations_by_device", "notifications", "notifications_by_id", "notifications_by_nid",
		"scheduled_pushes", "scheduled_by_id", "id_counters", "req_ids", "daily_volume", "task_progress",
		"installation_badges", "dead_tokens"} {
		if !tables[want] {
			t.Errorf("schema lacks table %s", want)
		}
	}
}

func TestStoreCassandraScanQuery(t *testing.T) {
	c := func(dt, oid string) []byte { return store.AppendCursor(nil, dt, oid) }
	for _, tc := range []struct {
		name string
		r    store.ScanRange
		stmt string
		args int
		ok   bool
	}{
		{"bucket", store.ScanRange{AppID: "a", Bucket: 3}, cqlScanBucket, 2, true},
		{"bucket after", store.ScanRange{AppID: "a", Bucket: 3, After: c("ios", "o")}, cqlScanBucketAfter, 4, true},
		{"channel dt", store.ScanRange{AppID: "a", Channel: "c", Bucket: 3, DeviceType: "ios"}, cqlScanChannelDT, 4, true},
		{"dt after same", store.ScanRange{AppID: "a", Bucket: 3, DeviceType: "ios", After: c("ios", "o")}, cqlScanBucketDTAfter, 4, true},
		{"dt after earlier type", store.ScanRange{AppID: "a", Bucket: 3, DeviceType: "ios", After: c("android", "o")}, cqlScanBucketDT, 3, true},
		{"dt after later type", store.ScanRange{AppID: "a", Bucket: 3, DeviceType: "android", After: c("ios", "o")}, "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmt, args, ok, err := scanQuery(tc.r)
			if err != nil || ok != tc.ok || stmt != tc.stmt || len(args) != tc.args {
				t.Errorf("scanQuery = %q %v %v %v; want %q with %d args, ok %v", stmt, args, ok, err, tc.stmt, tc.args, tc.ok)
			}
		})
	}
	if _, _, _, err := scanQuery(store.ScanRange{AppID: "a", After: []byte("junk")}); err == nil {
		t.Error("a malformed cursor was accepted")
	}
}
