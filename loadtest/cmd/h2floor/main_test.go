package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/loadtest/sim"
)

// TestH2floorAgainstAPNsSimulator sends the floor's requests to the real APNs simulator over
// HTTP/2 + TLS with a JWT: every one accepted, every token used in turn.
func TestH2floorAgainstAPNsSimulator(t *testing.T) {
	s, err := sim.NewAPNs(sim.APNsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	p8, err := s.NewKey("FLOORKEY01", "FLOORTEAM1")
	if err != nil {
		t.Fatal(err)
	}
	key, err := sim.ParseAPNsKey(p8)
	if err != nil {
		t.Fatal(err)
	}
	jwt, err := sim.NewAPNsToken(key, "FLOORKEY01", "FLOORTEAM1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var tokens []string
	for i := range 7 {
		tokens = append(tokens, fmt.Sprintf("%064x", i+1))
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := []string{"-url", s.URL(), "-tokens", write("tokens.txt", strings.Join(tokens, "\n")+"\n"),
		"-n", "700", "-c", "2", "-m", "8", "-body", write("body.json", `{"aps":{"alert":"floor"}}`), "-ca", write("ca.pem", string(s.CertPEM())),
		"-header", "authorization: bearer " + jwt, "-header", "apns-topic: com.example.floor", "-header", "apns-push-type: alert"}
	var out strings.Builder
	if err := run(args, &out); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Requests, OK int64
		Seconds      float64
		Error        string
	}
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if res.Requests != 700 || res.OK != 700 || res.Seconds <= 0 || res.Error != "" {
		t.Fatalf("result %+v", res)
	}
	st := s.Stats()
	if st.Accepted != 700 || len(st.PerToken) != len(tokens) {
		t.Fatalf("simulator accepted %d for %d tokens, want 700 for %d", st.Accepted, len(st.PerToken), len(tokens))
	}
	for tok, n := range st.PerToken {
		if n != 100 {
			t.Errorf("token %s accepted %d times, want 100", tok[:8], n)
		}
	}
	if err := run([]string{"-url", s.URL()}, &out); err == nil {
		t.Fatal("h2floor ran without -tokens, -body and -ca")
	}
}
