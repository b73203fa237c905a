package sim

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/sender/vivo"
)

// TestCLIVivoQuotaProfile: --vivo-quota-profile adds a vivo profile "quota" (a second app of
// the simulator, with its own day quota) to the vivo credentials and names it in QuotaFile;
// the _default app keeps no quota.
func TestCLIVivoQuotaProfile(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- RunCLI(ctx, []string{"-apns-addr", "127.0.0.1:0", "-fcm-addr", "127.0.0.1:0", "-dir", dir,
			"-vivo-addr", "127.0.0.1:0", "-vivo-quota-profile", "7"}, &out)
	}()
	waitfor.True(t, 10*time.Second, "pushsim to print its addresses", func() bool {
		return strings.Contains(out.String(), "stats:")
	})
	b, err := os.ReadFile(filepath.Join(dir, QuotaFile))
	if err != nil {
		t.Fatal(err)
	}
	var q QuotaProfile
	if err := json.Unmarshal(b, &q); err != nil || q != (QuotaProfile{Channel: "vivo", Profile: "quota", DayQuota: 7}) {
		t.Fatalf("%s = %s (%v)", QuotaFile, b, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, VendorsFile))
	if err != nil {
		t.Fatal(err)
	}
	var creds map[string]map[string]vivo.ProfileJSON
	if err := json.Unmarshal(b, &creds); err != nil {
		t.Fatal(err)
	}
	v := creds["vivo"]
	if v["quota"].AppID == "" || v["quota"].AppID == v["_default"].AppID {
		t.Fatalf("vivo profiles %+v: want a quota app of its own", v)
	}
	raw, _ := json.Marshal(v)
	if _, err := vivo.Load(raw); err != nil {
		t.Fatalf("the vivo sender refuses the credentials: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
