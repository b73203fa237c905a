package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

func TestAppCreateOriginalIdentity(t *testing.T) {
	data := t.TempDir()
	const id, ak, mk = "FFnN2hso42Wego3pWq4X5qlu-MdYXbMMI", "UtOCzqb67d3sN12Kts4URwy8", "DyJegPlemooo4X1tg94gQkw1"
	args := []string{"app", "create", "--name", "moved", "--json", "--data", data, "--id", id}
	t.Setenv("PUSHD_APP_KEY", "")
	t.Setenv("PUSHD_MASTER_KEY", mk)
	if err := run(context.Background(), args, io.Discard, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "PUSHD_APP_KEY") {
		t.Fatalf("without PUSHD_APP_KEY: %v", err)
	}
	t.Setenv("PUSHD_APP_KEY", ak)
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != `{"appId":"`+id+`"}` {
		t.Fatalf("--json output %q: want the id only", got)
	}
	err := run(context.Background(), args, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create: %v", err)
	}
	t.Setenv("PUSHD_MASTER_KEY", ak)
	err = run(context.Background(), []string{"app", "create", "--name", "x", "--data", data, "--id", "FFnN2hso42Wego3pWq4X5qlu"}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "must differ") || strings.Contains(err.Error(), ak) {
		t.Fatalf("same keys: %v", err)
	}
}
