package sim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
)

// TestCLIRunsVendorSimulators: with the vendor addresses set, pushsim runs each vendor's
// simulator, trusts them in ca.pem and writes credentials each sender accepts, pointing at them.
func TestCLIRunsVendorSimulators(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- RunCLI(ctx, []string{"-apns-addr", "127.0.0.1:0", "-fcm-addr", "127.0.0.1:0", "-dir", dir,
			"-hms-addr", "127.0.0.1:0", "-mi-addr", "127.0.0.1:0", "-vivo-addr", "127.0.0.1:0",
			"-oppo-addr", "127.0.0.1:0", "-mz-addr", "127.0.0.1:0", "-honor-addr", "127.0.0.1:0"}, &out)
	}()
	waitfor.True(t, 10*time.Second, "pushsim to print its addresses", func() bool {
		return strings.Contains(out.String(), "stats:")
	})
	b, err := os.ReadFile(filepath.Join(dir, VendorsFile))
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]json.RawMessage
	if err := json.Unmarshal(b, &creds); err != nil {
		t.Fatal(err)
	}
	loaders := map[string]func([]byte) error{
		"hms":  func(b []byte) error { _, err := hms.Load(b); return err },
		"mi":   func(b []byte) error { _, err := mi.Load(b); return err },
		"vivo": func(b []byte) error { _, err := vivo.Load(b); return err },
		"oppo": func(b []byte) error { _, err := oppo.Load(b); return err },
		"mz":   func(b []byte) error { _, err := mz.Load(b); return err },
		// Honor Push (sender/honor).
		"honor": func(b []byte) error { _, err := honor.Load(b); return err },
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("ca.pem holds no certificates")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}, Timeout: 10 * time.Second}
	for ch, load := range loaders {
		raw, ok := creds[ch]
		if !ok {
			t.Fatalf("%s: no credentials in %s", ch, VendorsFile)
		}
		if err := load(raw); err != nil {
			t.Fatalf("%s: the sender refuses the credentials: %v", ch, err)
		}
		m := regexp.MustCompile(`(?m)^` + ch + `: (https://\S+)$`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("%s: no address printed:\n%s", ch, out.String())
		}
		var profiles map[string]struct {
			Endpoint string `json:"endpoint"`
		}
		if err := json.Unmarshal(raw, &profiles); err != nil || profiles["_default"].Endpoint != m[1] {
			t.Fatalf("%s: credentials %s do not point at %s", ch, raw, m[1])
		}
		resp, err := c.Get(m[1] + "/_stats")
		if err != nil {
			t.Fatalf("%s: ca.pem does not let a client reach it: %v", ch, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: /_stats answered %d", ch, resp.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
