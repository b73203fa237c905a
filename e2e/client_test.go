package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
)

// Every wait of these tests is bounded by one of these.
const (
	startTimeout = 30 * time.Second // a process prints its address
	pushTimeout  = 60 * time.Second // a push reaches done
	stopTimeout  = 30 * time.Second // a process exits after SIGTERM
)

var apiServing = regexp.MustCompile(`api serving[^\n]*?(127\.0\.0\.1:\d+)`)

// pushd is one running `pushd serve` and its API base URL.
type pushd struct {
	*proc
	base string
}

// startPushd runs `pushd serve` on data with the API on a free loopback port, and waits until
// the API listens.
// simFreePorts give every in-process simulator of `pushd serve --sim` a free port, so that
// tests never clash with each other or with a `make run` on the default ports.
var simFreePorts = []string{
	"--sim-apns-addr", "127.0.0.1:0", "--sim-fcm-addr", "127.0.0.1:0", "--sim-hms-addr", "127.0.0.1:0",
	"--sim-mi-addr", "127.0.0.1:0", "--sim-vivo-addr", "127.0.0.1:0", "--sim-oppo-addr", "127.0.0.1:0",
	"--sim-mz-addr", "127.0.0.1:0", "--sim-honor-addr", "127.0.0.1:0",
}

// startPushdSim starts `pushd serve --dev --sim` with every simulator on a free port, then args.
func startPushdSim(t *testing.T, data string, args ...string) *pushd {
	t.Helper()
	all := append(append([]string{"--dev", "--sim"}, simFreePorts...), args...)
	return startPushd(t, data, all...)
}

func startPushd(t *testing.T, data string, args ...string) *pushd {
	t.Helper()
	args = append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-level", "info"}, args...)
	p := start(t, "pushd", bin(t, "pushd"), args...)
	addr := p.waitOutput(apiServing, startTimeout)
	return &pushd{proc: p, base: "http://" + addr}
}

// pushsim is a standalone gateway simulator process.
type pushsim struct {
	*proc
	apnsURL string
	dir     string // holds AuthKey_<kid>.p8 and ca.pem
	stats   *simClient
}

const (
	simKeyID  = "E2EKEY0001"
	simTeamID = "E2ETEAM001"
	simTopic  = "com.example.e2e"
)

var simAPNsLine = regexp.MustCompile(`apns: (https://127\.0\.0\.1:\d+) `)

// startPushsim runs pushsim on free loopback ports with the given knobs (e.g. "-rate", "4000").
func startPushsim(t *testing.T, knobs ...string) *pushsim {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"-apns-addr", "127.0.0.1:0", "-fcm-addr", "127.0.0.1:0", "-dir", dir,
		"-key-id", simKeyID, "-team-id", simTeamID, "-topics", simTopic}, knobs...)
	p := start(t, "pushsim", bin(t, "pushsim"), args...)
	url := p.waitOutput(simAPNsLine, startTimeout)
	ca, err := os.ReadFile(dir + "/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("pushsim's ca.pem holds no certificate")
	}
	return &pushsim{proc: p, apnsURL: url, dir: dir, stats: newSimClient(url, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})}
}

// simClient reads a simulator's control endpoints.
type simClient struct {
	url string
	c   *http.Client
}

func newSimClient(url string, tlsCfg *tls.Config) *simClient {
	return &simClient{url: url, c: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true},
	}}
}

// get returns the simulator's stats; withTokens includes the per-token counts.
func (s *simClient) get(withTokens bool) (sim.Stats, error) {
	u := s.url + "/_stats"
	if !withTokens {
		u += "?tokens=0"
	}
	var st sim.Stats
	res, err := s.c.Get(u)
	if err != nil {
		return st, fmt.Errorf("cannot read simulator stats: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("simulator stats: status %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("cannot decode simulator stats: %w", err)
	}
	return st, nil
}

func (s *simClient) mustGet(t *testing.T, withTokens bool) sim.Stats {
	t.Helper()
	st, err := s.get(withTokens)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// client calls the REST API as one app.
type client struct {
	base   string
	appID  string
	key    string
	master string
	c      *http.Client
}

func newClient(base, appID, key, master string) *client {
	return &client{base: base, appID: appID, key: key, master: master, c: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body (JSON-encoded unless nil) with the app key or the master key.
func (c *client) call(method, path string, master bool, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-SVC-Id", c.appID)
	if master {
		req.Header.Set("X-SVC-Key", c.master+",master")
	} else {
		req.Header.Set("X-SVC-Key", c.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// push sends POST /1.1/push with the master key and returns the record's objectId.
func (c *client) push(t *testing.T, body any) string {
	t.Helper()
	status, b, err := c.call("POST", "/1.1/push", true, body)
	if err != nil || status != http.StatusOK {
		t.Fatalf("push: status %d %s: %v", status, b, err)
	}
	var r struct {
		ObjectID string `json:"objectId"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.ObjectID == "" {
		t.Fatalf("push answer %s: %v", b, err)
	}
	return r.ObjectID
}

// record is a push record as GET /1.1/tables/Notifications/<objectId> shows it.
type record struct {
	ObjectID      string   `json:"objectId"`
	Status        string   `json:"status"`
	Devices       int64    `json:"devices"`
	Successes     int64    `json:"successes"`
	Failures      int64    `json:"failures"`
	Expired       int64    `json:"expired"`
	InvalidTokens int64    `json:"invalidTokens"`
	IOSSuccesses  int64    `json:"iosSuccesses"`
	Tasks         int      `json:"tasks"`
	TasksDone     int      `json:"tasksDone"`
	Errors        []string `json:"errors"`
}

// record reads a push record; found is false on 404.
func (c *client) record(oid string) (rec record, found bool, err error) {
	status, b, err := c.call("GET", "/1.1/tables/Notifications/"+oid, true, nil)
	if err != nil {
		return rec, false, err
	}
	if status == http.StatusNotFound {
		return rec, false, nil
	}
	if status != http.StatusOK {
		return rec, false, fmt.Errorf("record %s: status %d %s", oid, status, b)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("cannot decode record %s: %w", oid, err)
	}
	return rec, true, nil
}

// waitDone polls a record until its status is done and returns it.
func (c *client) waitDone(t *testing.T, oid string) record {
	t.Helper()
	var rec record
	waitfor.True(t, pushTimeout, "push "+oid+" to be done", func() bool {
		r, found, err := c.record(oid)
		if err != nil {
			t.Fatal(err)
		}
		rec = r
		return found && (r.Status == push.StatusDone || r.Status == push.StatusCancelled)
	})
	if rec.Status != push.StatusDone {
		t.Fatalf("push %s ended %s: %+v", oid, rec.Status, rec)
	}
	return rec
}
