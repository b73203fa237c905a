package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExportCommandProgress: pushd export reports its progress on stderr, through the shared
// progress meter, as plain lines when stderr is not a terminal: the final line has the rows
// written, 100% of the buckets and a rate. The export itself goes to --out untouched.
func TestExportCommandProgress(t *testing.T) {
	data := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"app", "create", "--data", data, "--name", "p", "--json"}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	var k appKeys
	if err := json.Unmarshal(out.Bytes(), &k); err != nil {
		t.Fatal(err)
	}
	const rows = 30
	var lines strings.Builder
	for i := range rows {
		fmt.Fprintf(&lines, `{"objectId":"p%04d","createdAt":"2026-11-01T00:00:00Z","updatedAt":"2026-11-20T00:00:00Z","deviceType":"android","installationId":"inst-%04d"}`+"\n", i, i)
	}
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var o bytes.Buffer
	if err := run(context.Background(), []string{"import", "--data", data, "--app", k.AppID, in}, &o, &o, nil); err != nil {
		t.Fatalf("import: %v\n%s", err, o.String())
	}
	file := filepath.Join(t.TempDir(), "out.jsonl")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"export", "--data", data, "--app", k.AppID, "--out", file}, &stdout, &stderr, nil); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr.String())
	}
	final := regexp.MustCompile(`(?m)^export: 30 rows 100%, \d+ rows/s$`)
	if !final.MatchString(stderr.String()) {
		t.Fatalf("export's stderr %q has no final progress line matching %s", stderr.String(), final)
	}
	if strings.Contains(stderr.String(), "\x1b[") {
		t.Fatalf("export redrew a bar on a stderr that is not a terminal: %q", stderr.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != rows {
		t.Fatalf("export wrote %d lines, want %d", n, rows)
	}
}
