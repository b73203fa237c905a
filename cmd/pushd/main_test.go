package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/sender"
)

// syncBuf is a goroutine-safe writer for a running serve's stdout.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs `pushd serve` in-process and returns its address and a stop function
// that cancels it (what SIGTERM does) and returns its error.
func startServe(t *testing.T, data string, extra ...string) (string, *syncBuf, func() error) {
	t.Helper()
	addrC := make(chan string, 1)
	out := &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn"}, extra...)
	go func() {
		done <- run(ctx, args, out, io.Discard, &testHooks{ready: func(a string) { addrC <- a }})
	}()
	select {
	case a := <-addrC:
		return a, out, func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("serve exited early: %v", err)
	}
	return "", nil, nil
}

func TestServeDevAppAndSecondServeRefused(t *testing.T) {
	data := t.TempDir()
	addr, out, stop := startServe(t, data, "--dev")
	var keys appKeys
	b, err := os.ReadFile(filepath.Join(data, "dev-app.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &keys); err != nil || keys.AppID == "" || keys.AppKey == "" || keys.MasterKey == "" {
		t.Fatalf("dev-app.json %s: %v", b, err)
	}
	if !strings.Contains(out.String(), "created the dev app") || !strings.Contains(out.String(), keys.AppKey) {
		t.Fatalf("stdout lacks the dev keys: %s", out)
	}
	env, _ := os.ReadFile(filepath.Join(data, "dev-app.env"))
	if !strings.Contains(string(env), "export PUSHD_APP_ID="+keys.AppID) {
		t.Fatalf("dev-app.env: %s", env)
	}

	// The API answers with the dev keys.
	req, _ := http.NewRequest("POST", "http://"+addr+"/1.1/installations", strings.NewReader(`{"deviceType":"android","installationId":"x"}`))
	req.Header.Set("X-SVC-Id", keys.AppID)
	req.Header.Set("X-SVC-Key", keys.AppKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Fatalf("create: %d", res.StatusCode)
	}
	res, err = http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(mb), `pushd_api_requests_total{route="installations_create",status="201"} 1`) || !strings.Contains(string(mb), "go_goroutines") {
		t.Fatalf("metrics lack the request or process metrics")
	}

	// A second serve on the same data directory fails clearly, and does not disturb the first.
	err = run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--data", data}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second serve: %v", err)
	}
	// So does app create while serve runs.
	err = run(context.Background(), []string{"app", "create", "--name", "x", "--data", data}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("app create during serve: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// Later starts print the same dev keys and create no second app.
	_, out, stop = startServe(t, data, "--dev")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "created the dev app") || !strings.Contains(out.String(), keys.MasterKey) {
		t.Fatalf("restart stdout: %s", out)
	}
}

func TestServeFlagsAndRoles(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--roles", "api,bogus"}, `unknown role "bogus"`},
		{[]string{"serve", "--roles", ","}, "no roles"},
		{[]string{"serve", "--store", "mysql"}, "unknown store"},
		{[]string{"serve", "--log", "nats"}, "unknown log"},
		{[]string{"serve", "extra"}, "unexpected arguments"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		err := run(context.Background(), c.args, io.Discard, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	t.Setenv("PUSHD_ROLES", "api")
	t.Setenv("PUSHD_ADDR", ":9999")
	fs := newFlagSet()
	cfg, err := parseServeFlags([]string{"--addr", ":7777"}, fs)
	if err != nil || fmt.Sprint(cfg.Roles) != "[api]" || cfg.Addr != ":7777" {
		t.Fatalf("env and flag precedence: %+v %v", cfg, err)
	}
}

// TestServeRefusesDurationsThatCannotWork checks that a negative or zero duration stops serve
// before it opens anything, whether from a flag or from the environment, and that a drain
// delay of 0 (none) is fine.
func TestServeRefusesDurationsThatCannotWork(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--drain-delay", "-5s"}, "--drain-delay must not be negative, got -5s (0: no delay)"},
		{[]string{"--sweep-every", "-1h"}, "--sweep-every must be positive, got -1h"},
		{[]string{"--sweep-every", "0"}, "--sweep-every must be positive, got 0s"},
		{[]string{"--sweep-every", "-90m"}, "--sweep-every must be positive, got -1h30m"},
		{[]string{"--cassandra-timeout", "-1s"}, "--cassandra-timeout must be positive, got -1s"},
		{[]string{"--cassandra-timeout", "0"}, "--cassandra-timeout must be positive, got 0s"},
		{[]string{"--sender-retry-horizon", "0"}, "--sender-retry-horizon must be positive, got 0s"},
		{[]string{"--sender-max-backoff", "-1s"}, "--sender-max-backoff must be positive, got -1s"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data}, c.args...)
		// Already cancelled: a serve that accepted the value stops at once instead of hanging.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := run(ctx, args, io.Discard, io.Discard, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
		if _, serr := os.Stat(data); !os.IsNotExist(serr) {
			t.Errorf("%v: the data directory was created (%v): serve started before refusing", c.args, serr)
		}
	}
	c, err := parseServeFlags([]string{"--drain-delay", "0"}, newFlagSet())
	if err != nil || c.DrainDelay != 0 {
		t.Fatalf("--drain-delay 0: %v %+v", err, c)
	}
	if c.Sender.RetryHorizon != sender.DefaultRetryHorizon || c.Sender.MaxBackoff != sender.DefaultMaxBackoff {
		t.Errorf("sender defaults: horizon %s, max backoff %s", c.Sender.RetryHorizon, c.Sender.MaxBackoff)
	}
	t.Setenv("PUSHD_SENDER_RETRY_HORIZON", "20m")
	if c, err := parseServeFlags([]string{"--sender-max-backoff", "2s"}, newFlagSet()); err != nil || c.Sender.RetryHorizon != 20*time.Minute || c.Sender.MaxBackoff != 2*time.Second {
		t.Errorf("PUSHD_SENDER_RETRY_HORIZON=20m --sender-max-backoff 2s: %v %+v", err, c)
	}
	t.Setenv("PUSHD_SWEEP_EVERY", "-1h")
	if _, err := parseServeFlags(nil, newFlagSet()); err == nil || err.Error() != "--sweep-every must be positive, got -1h" {
		t.Errorf("PUSHD_SWEEP_EVERY=-1h: err %v", err)
	}
}

func TestServeAPIOnlyRole(t *testing.T) {
	_, _, stop := startServe(t, t.TempDir(), "--roles", "api")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestAppCreateJSON(t *testing.T) {
	data := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"app", "create", "--name", "shop", "--json", "--data", data}, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || len(m) != 3 || m["appId"] == "" || m["appKey"] == "" || m["masterKey"] == "" {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"app", "create", "--json", "--data", data}, io.Discard, io.Discard, nil); err == nil {
		t.Fatal("missing --name accepted")
	}
	if err := run(context.Background(), []string{"app", "create", "--name", "x", "--buckets", "3", "--data", data}, io.Discard, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Fatalf("bad buckets: %v", err)
	}
}

func TestServeFlagsFromEnvironment(t *testing.T) {
	t.Setenv("PUSHD_FANOUT_BATCH_SIZE", "64")
	t.Setenv("PUSHD_CASSANDRA_PASSWORD", "from-env")
	t.Setenv("PUSHD_PEBBLE_CACHE_SIZE", "268435456")
	t.Setenv("PUSHD_PEBBLE_WAL_MIN_SYNC_INTERVAL", "0")
	t.Setenv("PUSHD_PEBBLE_DEVICE_CACHE_ENTRIES", "0")
	fs := newFlagSet()
	c, err := parseServeFlags([]string{"--fanout-checkpoint-every", "500"}, fs)
	if err != nil {
		t.Fatal(err)
	}
	if c.Worker.BatchSize != 64 || c.Cassandra.Password != "from-env" || c.Worker.CheckpointEvery != 500 || c.Pebble.CacheSize != 256<<20 {
		t.Fatalf("env not applied: batch %d password %q checkpoint %d cache %d", c.Worker.BatchSize, c.Cassandra.Password, c.Worker.CheckpointEvery, c.Pebble.CacheSize)
	}
	if c.Pebble.WALMinSyncInterval >= 0 { // 0 from a user means none, the field's negative
		t.Fatalf("PUSHD_PEBBLE_WAL_MIN_SYNC_INTERVAL=0 gave %v, want none", c.Pebble.WALMinSyncInterval)
	}
	if c.Pebble.DeviceCacheEntries >= 0 {
		t.Fatalf("PUSHD_PEBBLE_DEVICE_CACHE_ENTRIES=0 gave %d, want none", c.Pebble.DeviceCacheEntries)
	}
	// Store sizes that cannot work are refused at start.
	if _, err := parseServeFlags([]string{"--pebble-memtable-size", "1000"}, newFlagSet()); err == nil || !strings.Contains(err.Error(), "memtable") {
		t.Fatalf("tiny memtable: err %v, want a refusal naming the memtable", err)
	}
	// The command line wins over the environment.
	t.Setenv("PUSHD_FANOUT_CHECKPOINT_EVERY", "9999")
	if c, err = parseServeFlags([]string{"--fanout-checkpoint-every", "500"}, newFlagSet()); err != nil || c.Worker.CheckpointEvery != 500 {
		t.Fatalf("command line vs env: %v %+v", err, c)
	}
	// A value that does not parse is an error naming the variable, not a silent default.
	t.Setenv("PUSHD_DEV", "maybe")
	if _, err := parseServeFlags(nil, newFlagSet()); err == nil || !strings.Contains(err.Error(), "PUSHD_DEV") {
		t.Fatalf("bad env value: err %v, want one naming PUSHD_DEV", err)
	}
}

// TestServeOpsEndpointsWithoutAPIRole probes --ops-addr of a fanout+scheduler process as
// docs/operations.md describes the api role's endpoints: ready until the stop, then 503 "not
// ready" while it keeps serving for --drain-delay (liveness unchanged), and {code, error} for
// an unknown path or another method.
func TestServeOpsEndpointsWithoutAPIRole(t *testing.T) {
	data := t.TempDir()
	opsC := make(chan string, 1)
	endDrain := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	var serveErr error
	var once sync.Once
	stop := func() error {
		once.Do(func() { cancel(); close(endDrain); <-finished })
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	// An hour: only the test hook ends this drain, so no check below races its end.
	args := []string{"serve", "--data", data, "--roles", "fanout,scheduler", "--ops-addr", "127.0.0.1:0", "--drain-delay", "1h", "--log-level", "warn"}
	go func() {
		defer close(finished)
		serveErr = run(ctx, args, io.Discard, io.Discard, &testHooks{opsReady: func(a string) { opsC <- a }, opsEndDrain: endDrain})
	}()
	var addr string
	select {
	case addr = <-opsC:
	case <-finished:
		t.Fatalf("serve exited early: %v", serveErr)
	}
	get := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if ct := res.Header.Get("Content-Type"); path != "/metrics" && ct != "application/json; charset=utf-8" {
			t.Errorf("%s %s: Content-Type %q, want JSON", method, path, ct)
		}
		return res.StatusCode, string(body)
	}
	want := func(method, path string, wantCode int, wantBody string) {
		t.Helper()
		if code, body := get(method, path); code != wantCode || body != wantBody {
			t.Fatalf("%s %s: %d %s, want %d %s", method, path, code, body, wantCode, wantBody)
		}
	}
	want("GET", "/healthz", 200, `{"status":"ok"}`)
	want("GET", "/readyz", 200, `{"status":"ready"}`)
	if code, body := get("GET", "/metrics"); code != 200 || !strings.Contains(body, "pushd_fanout_") {
		t.Fatalf("/metrics of a fanout node: %d, lacks fan-out metrics:\n%.500s", code, body)
	}
	want("GET", "/nope", 404, `{"code":404,"error":"no route for GET /nope"}`)
	want("POST", "/readyz", 405, `{"code":404,"error":"method POST is not allowed on /readyz"}`)
	want("DELETE", "/metrics", 405, `{"code":404,"error":"method DELETE is not allowed on /metrics"}`)

	// SIGTERM: readiness turns false at once, and the server keeps serving for --drain-delay.
	cancel()
	waitfor.True(t, 10*time.Second, "/readyz to answer 503 after the stop began", func() bool {
		code, _ := get("GET", "/readyz")
		return code == 503
	})
	want("GET", "/readyz", 503, `{"code":503,"error":"not ready"}`)
	want("GET", "/healthz", 200, `{"status":"ok"}`)
	if code, _ := get("GET", "/metrics"); code != 200 {
		t.Fatalf("/metrics during the drain: %d", code)
	}
	select {
	case <-finished:
		t.Fatalf("serve returned during --drain-delay: %v", serveErr)
	default:
	}
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("the ops listener still accepts after the stop")
	}
}

// TestServeCredentialUploadsAreValidated uploads gateway credentials through the admin API of
// a real serve: each kind's validator refuses what cannot work, and no secret is echoed.
func TestServeCredentialUploadsAreValidated(t *testing.T) {
	t.Setenv("PUSHD_ADMIN_TOKEN", "admin-token-for-tests-0001")
	addr, _, stop := startServe(t, t.TempDir())
	defer func() { _ = stop() }()
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer admin-token-for-tests-0001")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := do("POST", "/admin/apps", `{"name":"creds"}`)
	if code != 201 && code != 200 {
		t.Fatalf("create app: %d %s", code, body)
	}
	var app struct {
		AppID string `json:"appId"`
	}
	if err := json.Unmarshal([]byte(body), &app); err != nil || app.AppID == "" {
		t.Fatalf("create app answer %s: %v", body, err)
	}
	p8, err := sim.NewAPNsKey("KEY0000001", "TEAM000001")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(map[string]any{"defaultTopic": "com.example", "teams": []map[string]string{{"teamId": "TEAM000001", "keyId": "KEY0000001", "p8": string(p8)}}})
	cases := []struct {
		kind, body string
		ok         bool
	}{
		{"apns", string(good), true},
		{"apns", `{"teams":[{"teamId":"T","keyId":"K","p8":"not a key"}]}`, false},
		{"fcm", `{"type":"service_account"}`, false},
		{"mi", `{"_default":{"appSecret":"s","packageName":"com.example"}}`, true},
		{"mi", `{"_default":{"appSecret":"s"}}`, false}, // a vendor with a driver checks its fields
		{"mi", `{"_default":{}}`, false},
		{"hms", `{"_default":{"appId":"104455667","appSecret":"s"},"beta":{"appId":"2","appSecret":"t"}}`, true},
		{"hms", `{"_default":{"appId":"not numeric","appSecret":"s"}}`, false},
		{"vivo", `{"_default":{"appId":"1"}}`, false},
		{"vivo", `{"_default":{"appId":"10004","appKey":"k","appSecret":"s"}}`, true},
		{"oppo", `{"_default":{"appKey":"k"}}`, false},
		{"oppo", `{"_default":{"appKey":"k","masterSecret":"s"}}`, true},
		{"windows", `{}`, false},
	}
	for _, c := range cases {
		code, body := do("PUT", "/admin/apps/"+app.AppID+"/credentials/"+c.kind, c.body)
		if c.ok != (code == 200) {
			t.Fatalf("upload %s %.40s: %d %s", c.kind, c.body, code, body)
		}
		if strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "appSecret") {
			t.Fatalf("upload answer echoes the secret: %s", body)
		}
	}
	_, body = do("GET", "/admin/apps/"+app.AppID, "")
	if strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, "appSecret") || !strings.Contains(body, "apns") {
		t.Fatalf("app view: %s, want credential kinds without secrets", body)
	}
}

// TestServeHelpExitsZero runs main in a child process (this test binary, told by
// PUSHD_TEST_MAIN_ARGS to act as pushd) and checks exit statuses: help asked for is not an
// error, a missing command or a bad flag is.
func TestServeHelpExitsZero(t *testing.T) {
	if args, ok := os.LookupEnv("PUSHD_TEST_MAIN_ARGS"); ok {
		os.Args = append([]string{"pushd"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	for _, c := range []struct {
		args       string
		wantStatus int
		wantStdout string // "" when stdout must be empty
		wantStderr string
	}{
		{"serve -h", 0, "-drain-delay", ""},
		{"serve --help", 0, "-sweep-every", ""},
		{"app create -h", 0, "-buckets", ""},
		{"--help", 0, "pushd serve [flags]", ""},
		{"serve --no-such-flag", 1, "", "flag provided but not defined: -no-such-flag"},
		{"app create --no-such-flag", 1, "", "flag provided but not defined: -no-such-flag"},
		{"", 1, "", "pushd serve [flags]"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelpExitsZero$")
		cmd.Env = append(os.Environ(), "PUSHD_TEST_MAIN_ARGS="+c.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("pushd %s: %v", c.args, err)
		}
		if status != c.wantStatus {
			t.Errorf("pushd %s: exit status %d, want %d; stderr:\n%.300s", c.args, status, c.wantStatus, stderr.String())
		}
		if (c.wantStdout == "") != (stdout.Len() == 0) || !strings.Contains(stdout.String(), c.wantStdout) {
			t.Errorf("pushd %s: stdout %.300q, want it to have %q", c.args, stdout.String(), c.wantStdout)
		}
		if (c.wantStderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), c.wantStderr) {
			t.Errorf("pushd %s: stderr %.300q, want it to have %q", c.args, stderr.String(), c.wantStderr)
		}
	}
}
