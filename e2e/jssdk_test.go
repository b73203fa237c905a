package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// jssdkTimeout bounds the whole node run; the SDK test takes about a second.
const jssdkTimeout = 2 * time.Minute

// TestE2EJSSDK drives the real pushd with the original service's JavaScript SDK from npm,
// unchanged (e2e/jssdk: leancloud-storage pinned in package.json and package-lock.json,
// installed by `npm ci --prefix e2e/jssdk`, which .ci/run does). Without node or the
// installed package it skips on a developer machine and fails in CI (CI=true).
func TestE2EJSSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: builds and runs the real binary")
	}
	ci := os.Getenv("CI") == "true"
	missing := func(format string, args ...any) {
		t.Helper()
		if ci {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed: the JavaScript SDK test needs Node.js 18 or later (%v)", err)
	}
	dir, err := filepath.Abs("jssdk")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "leancloud-storage", "package.json")); err != nil {
		missing("the original JavaScript SDK is not installed: run `npm ci --prefix e2e/jssdk` (%v)", err)
	}

	data := t.TempDir()
	createOriginalApp(t, data)
	p := startPushd(t, data)

	ctx, cancel := context.WithTimeout(context.Background(), jssdkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", filepath.Join(dir, "sdk.test.js"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PUSHD_JSSDK_SERVER_URL="+p.base,
		"PUSHD_JSSDK_APP_ID="+origAppID,
		"PUSHD_JSSDK_APP_KEY="+origAppKey,
		"PUSHD_JSSDK_MASTER_KEY="+origMasterKey,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test sdk.test.js: %v\n%s", err, out)
	}
	t.Logf("node --test sdk.test.js:\n%s", out)
}
