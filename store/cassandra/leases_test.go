package cassandra

import (
	"strings"
	"testing"
)

// TestStoreCassandraLeaseColumns: the lease and claim statements name columns the schema
// has, and the lease row carries no TTL (its epoch must outlive every tenure).
func TestStoreCassandraLeaseColumns(t *testing.T) {
	tables := map[string]string{}
	for _, st := range SchemaStatements() {
		f := strings.Fields(st)
		if len(f) > 5 && f[1] == "TABLE" {
			tables[f[5]] = st
		}
	}
	for table, cols := range map[string][]string{
		"leases":          {"name", "owner", "epoch", "expires"},
		"scheduled_by_id": {"app_id", "id", "slot", "fired_epoch"},
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
		if strings.Contains(st, "default_time_to_live") {
			t.Errorf("table %s has a default TTL", table)
		}
	}
	for _, stmt := range []string{cqlLeaseGet, cqlLeaseInsert, cqlLeaseSet, cqlSchedClaimGet, cqlSchedClaim} {
		if strings.Contains(stmt, "TTL") {
			t.Errorf("%q writes with a TTL", stmt)
		}
	}
	for _, stmt := range []string{cqlLeaseInsert, cqlLeaseSet, cqlSchedClaim} {
		if !strings.Contains(stmt, " IF ") {
			t.Errorf("%q is not a lightweight transaction", stmt)
		}
	}
}
