package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pushd/pushd/loadtest/scansim"
)

// TestImportCommandArguments: bad combinations are refused before the store is opened; the
// master key is asked for (the prompt's hook) when the environment has none, never a flag.
func TestImportCommandArguments(t *testing.T) {
	data := t.TempDir()
	t.Setenv(importEnvKey, "")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"app", "create", "--data", data, "--name", "m", "--json"}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	var k appKeys
	if err := json.Unmarshal(out.Bytes(), &k); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "x.jsonl")
	if err := os.WriteFile(file, []byte(`{"objectId":"a1","createdAt":"2026-11-01T00:00:00Z","deviceType":"android","installationId":"i1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", data, file}, "needs --app"},
		{[]string{"--data", data, "--app", k.AppID}, "needs --from"},
		{[]string{"--data", data, "--app", k.AppID, "--from", "http://127.0.0.1:1", file}, "not both"},
		{[]string{"--data", data, "--app", k.AppID, "--since", "2026-01-01T00:00:00Z", file}, "--from only"},
		{[]string{"--data", data, "--app", k.AppID, "--format", "xml", file}, "unknown format"},
		{[]string{"--data", data, "--app", k.AppID, "--from", "http://127.0.0.1:1", "--since", "yesterday"}, "ISO 8601"},
		{[]string{"--data", data, "--app", "nosuchapp", file}, "does not exist"},
		{[]string{"--data", data, "--app", k.AppID, "--master-key", "x", file}, "not defined"},
	} {
		var o bytes.Buffer
		err := run(context.Background(), append([]string{"import"}, c.args...), &o, &o, nil)
		if err == nil || !strings.Contains(err.Error()+o.String(), c.want) {
			t.Errorf("import %v: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	sim, err := scansim.Start("127.0.0.1:0", scansim.Config{AppID: k.AppID, MasterKey: "orig", Rows: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	asked := 0
	hooks := &testHooks{readKey: func() (string, error) { asked++; return "orig", nil }}
	var o bytes.Buffer
	if err := run(context.Background(), []string{"import", "--data", data, "--app", k.AppID, "--from", sim.URL(), "--json"}, &o, &o, hooks); err != nil {
		t.Fatalf("pull with the prompted key: %v\n%s", err, o.String())
	}
	if asked != 1 || !strings.Contains(o.String(), `"stored":50`) {
		t.Fatalf("prompted %d times; output %s", asked, o.String())
	}
}
