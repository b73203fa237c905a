package cassandra

import (
	"strings"
	"testing"
)

// TestStoreCassandraGatewayColumns: the registry's statements name columns the schema has, and
// an advertisement is written with a TTL (a node that died leaves no row behind).
func TestStoreCassandraGatewayColumns(t *testing.T) {
	var table string
	for _, st := range SchemaStatements() {
		if f := strings.Fields(st); len(f) > 5 && f[1] == "TABLE" && f[5] == "gateways" {
			table = st
		}
	}
	if table == "" {
		t.Fatal("schema lacks table gateways")
	}
	for _, c := range []string{"node", "url", "partitions", "expires"} {
		if !strings.Contains(table, "\n  "+c+" ") {
			t.Errorf("table gateways lacks column %s", c)
		}
		for _, stmt := range []string{cqlGatewayPut, cqlGatewayList} {
			if !strings.Contains(stmt, c) {
				t.Errorf("%q does not name column %s", stmt, c)
			}
		}
	}
	if !strings.Contains(cqlGatewayPut, "USING TTL ?") {
		t.Errorf("%q writes without a TTL", cqlGatewayPut)
	}
}
