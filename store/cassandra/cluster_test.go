package cassandra

import (
	"strings"
	"testing"
)

// TestStoreCassandraClusterLimitStatements: the statements of cluster-wide limits, members
// and device-id claims name columns the schema has; a device id is claimed and released by
// LWT; counters carry no TTL (Cassandra refuses one), members and blocks do.
func TestStoreCassandraClusterLimitStatements(t *testing.T) {
	tables := map[string]string{}
	for _, st := range SchemaStatements() {
		f := strings.Fields(st)
		if len(f) > 5 && f[1] == "TABLE" {
			tables[f[5]] = st
		}
	}
	for table, cols := range map[string][]string{
		"call_counts":             {"app_id", "minute", "calls"},
		"app_blocks":              {"app_id", "until"},
		"members":                 {"group_name", "member", "expires"},
		"installations_by_device": {"app_id", "kind", "device_id", "object_id"},
	} {
		st, ok := tables[table]
		if !ok {
			t.Fatalf("schema lacks table %s", table)
		}
		for _, c := range cols {
			if !strings.Contains(st, "\n  "+c+" ") {
				t.Errorf("table %s lacks column %s", table, c)
			}
		}
	}
	if !strings.Contains(tables["members"], "PRIMARY KEY ((group_name), member)") {
		t.Errorf("members is not one partition per group: %s", tables["members"])
	}
	for _, stmt := range []string{cqlDeviceClaim, cqlDeviceRelease} {
		if !strings.Contains(stmt, " IF ") {
			t.Errorf("%q is not a lightweight transaction", stmt)
		}
	}
	if !strings.HasSuffix(cqlDeviceClaim, "IF NOT EXISTS") {
		t.Errorf("%q does not claim only a free row", cqlDeviceClaim)
	}
	if !strings.HasSuffix(cqlDeviceRelease, "IF object_id = ?") {
		t.Errorf("%q may release another installation's row", cqlDeviceRelease)
	}
	for _, stmt := range []string{cqlCallsAdd, cqlCallsGet} {
		if strings.Contains(stmt, "TTL") || strings.Contains(stmt, " IF ") {
			t.Errorf("%q: a counter statement takes neither a TTL nor a condition", stmt)
		}
	}
	for _, stmt := range []string{cqlBlockSet, cqlMemberSet} {
		if !strings.Contains(stmt, "USING TTL ?") {
			t.Errorf("%q does not expire", stmt)
		}
	}
}
