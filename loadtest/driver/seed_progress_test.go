package driver

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/store/pebble"
)

// TestDriverSeedProgress seeds installations into a real API server (in process, on a real
// Pebble store) and checks the shared progress meter: on a terminal, a bar redrawn in place
// that ends at 100% with a rate and a newline; otherwise nothing is drawn there and the run's
// output keeps plain lines only.
func TestDriverSeedProgress(t *testing.T) {
	st, err := pebble.Open(t.TempDir(), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := api.New(api.Config{Addr: "127.0.0.1:0"}, api.Deps{Apps: st, Installations: st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	srv.SetReady(true)
	name := "seed-progress"
	app, perr, err := api.CreateApp(ctx, st, api.AppRequest{Name: &name}, time.Now())
	if perr != nil || err != nil {
		t.Fatalf("CreateApp: %v %v", perr, err)
	}

	for _, terminal := range []bool{true, false} {
		t.Run(fmt.Sprintf("terminal=%v", terminal), func(t *testing.T) {
			var term, out bytes.Buffer
			cfg := Config{PushdURL: "http://" + srv.Addr().String(), Concurrency: 8, Topic: "com.example.seed"}
			if terminal {
				cfg.Terminal = &term
			}
			r := &run{cfg: cfg.withDefaults(), out: &out}
			r.mon = newMonitor(time.Now(), "", r.cfg.SampleEvery, nil)
			r.api = newClient(r.cfg.PushdURL, 8, 10*time.Second)
			r.api.keys = keys{appID: app.ID, appKey: app.AppKey}
			const n = 120
			devs := make([]*Device, n)
			for i := range devs {
				tok := fmt.Sprintf("%064x", 0x5eed0000+i)
				if !terminal {
					tok = fmt.Sprintf("%064x", 0x5eed1000+i)
				}
				devs[i] = &Device{Index: i, IOS: true, Token: tok, Channels: []string{"seed"}}
			}
			got, _, err := r.seedDevices(ctx, r.api, devs)
			if err != nil || got != n {
				t.Fatalf("seeded %d of %d: %v", got, n, err)
			}
			if !terminal {
				if term.Len() != 0 || strings.Contains(out.String(), "\x1b[") {
					t.Fatalf("drew a bar without a terminal: terminal %q, output %q", term.String(), out.String())
				}
				return
			}
			final := regexp.MustCompile(`\r\x1b\[K  seeding: 120 installations \[=+\] 100%, \d+ installations/s\n$`)
			if !final.MatchString(term.String()) {
				t.Fatalf("terminal output %q does not end with the bar at 100%% (%s)", term.String(), final)
			}
		})
	}
}
