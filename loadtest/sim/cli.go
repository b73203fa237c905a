package sim

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RunCLI runs both simulators as a standalone gateway pair (`pushsim`, `pushd sim`) until ctx
// ends: it writes an APNs .p8 key, a service-account JSON and the simulators' CA bundle to
// -dir, prints the URLs and credentials to out, and serves. args are the flags without the
// program name; -h prints them. `pushsim device ...` runs a simulated own-channel Android
// device instead (RunDeviceCLI).
func RunCLI(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "device" {
		return RunDeviceCLI(ctx, args[1:], out)
	}
	fs := flag.NewFlagSet("pushsim", flag.ContinueOnError)
	fs.SetOutput(out)
	apnsAddr := fs.String("apns-addr", "127.0.0.1:2197", "APNs simulator listen address (2197 is Apple's alternative port)")
	fcmAddr := fs.String("fcm-addr", "127.0.0.1:2198", "FCM simulator listen address (send and /token endpoints)")
	dir := fs.String("dir", "", "directory for the generated .p8 key, service-account JSON and ca.pem (default: a new temporary directory)")
	keyID := fs.String("key-id", "SIMKEY0001", "APNs key id of the generated .p8 key")
	teamID := fs.String("team-id", "SIMTEAM001", "APNs team id the generated key belongs to")
	topics := fs.String("topics", "", "comma-separated bundle ids the team may push to (default: any)")
	sandbox := fs.Bool("sandbox", false, "serve the APNs development environment")
	project := fs.String("project", "pushd-sim", "FCM project id of the generated service account")
	quota := fs.Int("fcm-quota", 0, "FCM messages per project per sliding minute (0: unlimited)")
	tokenTTL := fs.Duration("fcm-token-ttl", time.Hour, "lifetime of FCM access tokens")
	var k Knobs
	fs.DurationVar(&k.Latency, "latency", 0, "added latency per answer")
	fs.DurationVar(&k.Jitter, "jitter", 0, "uniform random extra latency in [0, jitter)")
	fs.Float64Var(&k.ErrorRate, "error-rate", 0, "fraction of requests answered 500/503")
	fs.Float64Var(&k.InvalidTokenRate, "invalid-token-rate", 0, "fraction of device tokens that are dead (410 / 404)")
	fs.Float64Var(&k.ReceiptUninstalledRate, "receipt-uninstalled-rate", 0, "fraction of accepted vendor tokens whose receipt says uninstalled (HMS/Honor status 2, Xiaomi type 16, OPPO regid_invalid)")
	fs.Float64Var(&k.RatePerSecond, "rate", 0, "requests per second each simulator paces to (0: unlimited)")
	fs.Uint64Var(&k.Seed, "seed", 1, "seed for random faults, jitter and dead tokens")
	noTokens := fs.Bool("no-token-stats", false, "do not count accepted pushes per device token")
	record := fs.Int("record", 0, "keep up to this many accepted notifications per simulator for GET <url>/_sent")
	var vf vendorFlags
	vf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "pushsim-")
		if err != nil {
			return fmt.Errorf("cannot create credentials directory: %w", err)
		}
		*dir = d
	} else if err := os.MkdirAll(*dir, 0o700); err != nil {
		return fmt.Errorf("cannot create credentials directory %s: %w", *dir, err)
	}

	acfg := APNsConfig{Addr: *apnsAddr, Sandbox: *sandbox, NoTokenStats: *noTokens, Record: *record, Knobs: k}
	if *topics != "" {
		acfg.Topics = map[string][]string{*teamID: strings.Split(*topics, ",")}
	}
	apns, err := NewAPNs(acfg)
	if err != nil {
		return err
	}
	defer apns.Close()
	fcm, err := NewFCM(FCMConfig{Addr: *fcmAddr, QuotaPerMinute: *quota, AccessTokenTTL: *tokenTTL, NoTokenStats: *noTokens, Record: *record, Knobs: k})
	if err != nil {
		return err
	}
	defer fcm.Close()

	vendors, err := startVendors(vf, k, *noTokens, *record)
	if err != nil {
		return err
	}
	defer vendors.Close()

	p8, err := apns.NewKey(*keyID, *teamID)
	if err != nil {
		return err
	}
	sa, err := fcm.NewServiceAccount(*project)
	if err != nil {
		return err
	}
	keyPath := filepath.Join(*dir, "AuthKey_"+*keyID+".p8")
	saPath := filepath.Join(*dir, "service-account.json")
	caPath := filepath.Join(*dir, "ca.pem")
	ca := append(append([]byte(nil), apns.CertPEM()...), fcm.CertPEM()...)
	for _, c := range vendors.certs {
		ca = append(ca, c...)
	}
	files := []struct {
		path string
		b    []byte
	}{{keyPath, p8}, {saPath, sa}, {caPath, ca}}
	if len(vendors.creds) > 0 {
		b, err := json.MarshalIndent(vendors.creds, "", "  ")
		if err != nil {
			return fmt.Errorf("BUG: cannot encode the vendor credentials: %w", err)
		}
		files = append(files, struct {
			path string
			b    []byte
		}{filepath.Join(*dir, VendorsFile), b})
	}
	if vendors.quota != nil {
		b, err := json.Marshal(vendors.quota)
		if err != nil {
			return fmt.Errorf("BUG: cannot encode the quota profile: %w", err)
		}
		files = append(files, struct {
			path string
			b    []byte
		}{filepath.Join(*dir, QuotaFile), b})
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.b, 0o600); err != nil {
			return fmt.Errorf("cannot write %s: %w", f.path, err)
		}
	}
	// The vendor lines come before "ca:", the line scripts wait for.
	if err := vendors.print(out); err != nil {
		return err
	}
	env := "production"
	if *sandbox {
		env = "sandbox"
	}
	_, err = fmt.Fprintf(out, "apns: %s env=%s key_id=%s team_id=%s key=%s\n"+
		"fcm: %s token_url=%s project=%s service_account=%s\n"+
		"ca: %s\n"+
		"stats: GET <url>/_stats[?tokens=0], GET <url>/_sent, POST <url>/_reset\n"+
		"receipts (HMS, Honor): POST <url>/_receipt {\"appId\":\"<vendor app>\",\"url\":\"https://<pushd>/receipts/hms/<pushd appId>\",\"user\":\"…\",\"key\":\"…\"}\n"+
		"outage: POST <url>/_outage [{\"mode\":\"status|drop|goaway\",\"status\":503,\"retry_after\":\"5s\",\"for\":\"60s\"},...], DELETE <url>/_outage\n",
		apns.URL(), env, *keyID, *teamID, keyPath,
		fcm.URL(), fcm.TokenURL(), *project, saPath, caPath)
	if err != nil {
		return fmt.Errorf("cannot print simulator addresses: %w", err)
	}
	<-ctx.Done()
	return errors.Join(apns.Close(), fcm.Close(), vendors.Close())
}
