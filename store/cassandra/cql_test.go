package cassandra

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The static half of the CQL review (CLUSTER.md): every statement constant of the package is
// read from the source and checked against schema.cql, so a statement added later is checked
// too. statements_test.go runs them through the store and checks their bound values.

// table is one CREATE TABLE of schema.cql.
type table struct {
	name       string
	cols       map[string]string // column → type
	partition  []string
	clustering []string
	defaultTTL bool
}

func (tb *table) counter() bool {
	for _, ty := range tb.cols {
		if ty == "counter" {
			return true
		}
	}
	return false
}

var (
	reCreate  = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS (\w+) \((.*)\)(?: WITH (.*))?$`)
	rePKInner = regexp.MustCompile(`PRIMARY KEY \(\((.*?)\)(.*)\)`)
)

func schemaTables(t *testing.T) map[string]*table {
	t.Helper()
	out := map[string]*table{}
	for _, st := range SchemaStatements() {
		if !strings.HasPrefix(st, "CREATE TABLE") {
			continue
		}
		m := reCreate.FindStringSubmatch(st)
		if m == nil {
			t.Fatalf("cannot read table statement %.60q", st)
		}
		tb := &table{name: m[1], cols: map[string]string{}, defaultTTL: strings.Contains(m[3], "default_time_to_live")}
		for _, l := range strings.Split(m[2], "\n") {
			l = strings.TrimSpace(strings.SplitN(l, "--", 2)[0])
			l = strings.TrimSuffix(l, ",")
			if l == "" {
				continue
			}
			if pk := rePKInner.FindStringSubmatch(l); pk != nil {
				tb.partition = splitCols(pk[1])
				tb.clustering = splitCols(strings.TrimPrefix(pk[2], ","))
				continue
			}
			f := strings.Fields(l)
			tb.cols[f[0]] = f[1]
			if strings.HasSuffix(l, "PRIMARY KEY") {
				tb.partition = []string{f[0]}
			}
		}
		if len(tb.partition) == 0 {
			t.Fatalf("table %s has no partition key", tb.name)
		}
		out[tb.name] = tb
	}
	return out
}

func splitCols(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// packageStatements evaluates every string constant named cql* of the package's source.
func packageStatements(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	exprs := map[string]ast.Expr{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, sp := range g.Specs {
					vs := sp.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if strings.HasPrefix(n.Name, "cql") && i < len(vs.Values) {
							exprs[n.Name] = vs.Values[i]
						}
					}
				}
			}
		}
	}
	var eval func(e ast.Expr) string
	eval = func(e ast.Expr) string {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			if err != nil {
				t.Fatalf("cannot read constant %s: %v", e.Value, err)
			}
			return s
		case *ast.Ident:
			x, ok := exprs[e.Name]
			if !ok {
				t.Fatalf("constant %s is not a cql constant", e.Name)
			}
			return eval(x)
		case *ast.BinaryExpr:
			return eval(e.X) + eval(e.Y)
		case *ast.ParenExpr:
			return eval(e.X)
		}
		t.Fatalf("cannot evaluate %T", e)
		return ""
	}
	out := map[string]string{}
	for n, e := range exprs {
		out[n] = eval(e)
	}
	return out
}

// lwtTables are the tables written with lightweight transactions, and why. CLUSTER.md lists
// req_ids, leases and a scheduled push's firing; the others are compare-and-sets the store
// contract needs and that are rare per push (docs/decisions.md, "Cassandra: where LWTs run").
var lwtTables = map[string]string{
	"req_ids":                 "CLUSTER.md: req_id claims",
	"leases":                  "CLUSTER.md: leases",
	"scheduled_by_id":         "CLUSTER.md: a scheduled push's firing (and its cancel, which must not race the firing)",
	"apps":                    "an app is created once (ErrExists) and updated rarely",
	"id_counters":             "NextID: scheduled push ids unique across the cluster",
	"notifications_by_id":     "a push record's objectId is claimed once (ErrExists); one LWT per push",
	"notifications":           "a record's updates (per task) are compare-and-sets on its version",
	"offline_messages":        "an own-channel message is cached once although push.direct may deliver it twice",
	"installations_by_device": "issue 15 item 2: a device id is indexed to one installation across API nodes",
}

// keptTables are the tables whose rows are written without a TTL, and why.
var keptTables = map[string]string{
	"apps":                "kept until deleted",
	"leases":              "a lease's epoch must outlive every tenure",
	"id_counters":         "ids must never repeat",
	"scheduled_pushes":    "removed when fired or cancelled",
	"scheduled_by_id":     "removed when fired or cancelled",
	"pending_jobs":        "removed with the pending job",
	"task_progress":       "has a default TTL",
	"notification_counts": "counter: Cassandra refuses TTLs on counters; dropped with the record",
	"call_counts":         "counter: one row per app and minute",
	"daily_volume":        "counter: one row per app and day",
	"vendor_quotas":       "counter: one row per app, vendor budget and day",
}

// fullScans are statements allowed to read without a partition key.
var fullScans = map[string]string{
	"cqlAppList": "apps is one row per app",
}

var (
	reTable = regexp.MustCompile(`^(?:SELECT .*? FROM|INSERT INTO|UPDATE|DELETE FROM|DELETE \w+ FROM) (\w+)`)
	reWhere = regexp.MustCompile(` WHERE (.*?)(?: IF .*| LIMIT .*)?$`)
	reEq    = regexp.MustCompile(`(\w+) = (?:\?|'\w+')`)
	// reIn: a multi-partition read of the partitions listed in one bound value (CountMarketing
	// reads the rows of a fan-out batch's devices in one query).
	reIn      = regexp.MustCompile(`(\w+) IN \?`)
	reRange   = regexp.MustCompile(`(\w+) (?:<|>|<=|>=) \?`)
	reTuple   = regexp.MustCompile(`\(([\w, ]+)\) [<>]=? \(`)
	reSet     = regexp.MustCompile(` SET (.*?) WHERE `)
	reIf      = regexp.MustCompile(` IF (.*)$`)
	reInsCols = regexp.MustCompile(`^INSERT INTO \w+ \(([\w, ]+)\)`)
	reSelCols = regexp.MustCompile(`^SELECT (.*?) FROM`)
)

// TestStoreCassandraStatementsAgainstSchema: each statement names a table and columns of
// schema.cql, restricts the whole partition key, writes whole primary keys, uses LWT only on
// the tables of lwtTables, adds to counters only (no TTL, never retried by the driver), and
// writes with a TTL where the table keeps no rows forever.
func TestStoreCassandraStatementsAgainstSchema(t *testing.T) {
	tables := schemaTables(t)
	stmts := packageStatements(t)
	if len(stmts) < 40 {
		t.Fatalf("found %d statements, the package has more: the source reader is broken", len(stmts))
	}
	names := make([]string, 0, len(stmts))
	for n := range stmts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		st := stmts[name]
		m := reTable.FindStringSubmatch(st)
		if m == nil {
			t.Errorf("%s: cannot tell the table of %q", name, st)
			continue
		}
		tb, ok := tables[m[1]]
		if !ok {
			t.Errorf("%s: table %s is not in schema.cql", name, m[1])
			continue
		}
		kind := strings.Fields(st)[0]
		used := map[string]bool{} // columns restricted with =
		var named []string        // every column the statement names
		if w := reWhere.FindStringSubmatch(st); w != nil {
			for _, e := range append(reEq.FindAllStringSubmatch(w[1], -1), reIn.FindAllStringSubmatch(w[1], -1)...) {
				used[e[1]] = true
				named = append(named, e[1])
			}
			for _, e := range reRange.FindAllStringSubmatch(w[1], -1) {
				named = append(named, e[1])
			}
			for _, e := range reTuple.FindAllStringSubmatch(w[1], -1) {
				named = append(named, splitCols(e[1])...)
			}
		}
		if s := reSet.FindStringSubmatch(st); s != nil {
			for _, a := range strings.Split(s[1], ",") {
				named = append(named, strings.Fields(a)[0])
			}
		}
		if s := reIf.FindStringSubmatch(st); s != nil && !strings.HasPrefix(s[1], "NOT EXISTS") && s[1] != "EXISTS" {
			for _, e := range reEq.FindAllStringSubmatch(s[1], -1) {
				named = append(named, e[1])
			}
		}
		var inserted []string
		if s := reInsCols.FindStringSubmatch(st); s != nil {
			inserted = splitCols(s[1])
			named = append(named, inserted...)
		}
		if s := reSelCols.FindStringSubmatch(st); s != nil {
			named = append(named, splitCols(s[1])...)
		}
		for _, c := range named {
			if _, ok := tb.cols[c]; !ok {
				t.Errorf("%s: table %s has no column %s", name, tb.name, c)
			}
		}

		// Partition keys: a statement touches one partition.
		switch kind {
		case "INSERT":
			for _, c := range append(append([]string{}, tb.partition...), tb.clustering...) {
				if !contains(inserted, c) {
					t.Errorf("%s: inserts into %s without key column %s", name, tb.name, c)
				}
			}
		case "SELECT", "UPDATE", "DELETE":
			if _, ok := fullScans[name]; ok {
				break
			}
			for _, c := range tb.partition {
				if !used[c] {
					t.Errorf("%s: %s of %s does not restrict partition key column %s: %q", name, kind, tb.name, c, st)
				}
			}
			if kind == "UPDATE" {
				for _, c := range tb.clustering {
					if !used[c] {
						t.Errorf("%s: updates %s without clustering column %s", name, tb.name, c)
					}
				}
			}
		}

		lwt := strings.Contains(st, " IF ")
		if _, ok := lwtTables[tb.name]; lwt && !ok {
			t.Errorf("%s: lightweight transaction on %s, which CLUSTER.md does not list (add it to lwtTables with the reason, and to docs/decisions.md)", name, tb.name)
		}
		if lwt && retryable(st) {
			t.Errorf("%s: an LWT the driver may retry", name)
		}

		write := kind == "INSERT" || kind == "UPDATE"
		ttl := strings.Contains(st, "USING TTL")
		if tb.counter() {
			switch {
			case kind == "INSERT":
				t.Errorf("%s: INSERT into counter table %s", name, tb.name)
			case kind == "UPDATE" && !counterAdd.MatchString(st):
				t.Errorf("%s: a counter update that is not c = c + ?: %q", name, st)
			case kind == "UPDATE" && retryable(st):
				t.Errorf("%s: a counter update the driver may retry (counters are not idempotent)", name)
			case ttl:
				t.Errorf("%s: TTL on counter table %s", name, tb.name)
			}
		} else if kind == "UPDATE" && !retryable(st) && !lwt {
			t.Errorf("%s: classed as a counter update but %s has no counter", name, tb.name)
		}
		if _, kept := keptTables[tb.name]; write && !ttl && !tb.defaultTTL && !kept {
			t.Errorf("%s: writes %s without a TTL and the table has no default TTL (or add it to keptTables with the reason)", name, tb.name)
		}
	}
	// Every table with a default TTL or an LWT is a real table (the lists do not drift).
	for n := range lwtTables {
		if _, ok := tables[n]; !ok {
			t.Errorf("lwtTables names %s, not a table of schema.cql", n)
		}
	}
	for n := range keptTables {
		if _, ok := tables[n]; !ok {
			t.Errorf("keptTables names %s, not a table of schema.cql", n)
		}
	}
	if tb := tables["task_progress"]; tb == nil || !tb.defaultTTL {
		t.Error("task_progress has no default TTL: the rows of every job ever run would stay forever")
	}
}

// TestStoreCassandraRetryable: the driver may retry plain writes and reads, never counter
// updates or LWTs.
func TestStoreCassandraRetryable(t *testing.T) {
	for _, tc := range []struct {
		stmt string
		want bool
	}{
		{cqlInstInsert, true},
		{cqlDeviceDelete, true},
		{cqlProgressPut, true},
		{cqlVolumeAdd, false},
		{cqlDirectCountAdd, false},
		{`UPDATE call_counts SET calls = calls + ? WHERE app_id = ? AND minute = ?`, false},
		{cqlReqInsert, false},
		{cqlNotifCAS, false},
		{cqlSchedIDDelete, false},
		{`UPDATE t SET a = b + ? WHERE k = ?`, true}, // not an addition to itself
	} {
		if got := retryable(tc.stmt); got != tc.want {
			t.Errorf("retryable(%q) = %v, want %v", tc.stmt, got, tc.want)
		}
	}
	cl := clusterConfig(Config{Hosts: []string{"h"}})
	if cl.RetryPolicy != retryPolicy {
		t.Errorf("cluster retry policy = %v, want retryPolicy", cl.RetryPolicy)
	}
}
