package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// RunDeviceCLI runs one simulated own-channel Android device (`pushsim device`): it creates
// (or refreshes) its installation through the REST API unless -create=false, asks the router
// where to connect, connects, prints each push it receives as a JSON line and acks it, and
// reconnects when the connection drops, until ctx ends (or -count pushes arrived). -protocol
// lc speaks the original service's protocol (its router /v1/route, protobuf commands)
// instead of ours.
func RunDeviceCLI(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pushsim device", flag.ContinueOnError)
	fs.SetOutput(out)
	apiURL := fs.String("api", "http://127.0.0.1:8080", "pushd REST API base URL (the router)")
	appID := fs.String("app-id", os.Getenv("PUSHD_APP_ID"), "app id (default $PUSHD_APP_ID)")
	appKey := fs.String("app-key", os.Getenv("PUSHD_APP_KEY"), "app key (default $PUSHD_APP_KEY)")
	iid := fs.String("installation-id", "", "installationId of the device (default: a new random one)")
	channels := fs.String("channels", "", "comma-separated channels the installation subscribes to (with -create)")
	create := fs.Bool("create", true, "create or refresh the installation (deviceType android, no vendor) first")
	count := fs.Int("count", 0, "exit after this many pushes (0: run until interrupted)")
	noAck := fs.Bool("no-ack", false, "never ack (pushes stay in the server's offline cache)")
	ackDelay := fs.Duration("ack-delay", 0, "delay before each ack")
	protocol := fs.String("protocol", "json", "json: ours (GET /1.1/router, /1.1/connect); lc: the original service's (GET /v1/route, lc.protobuf2.1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *protocol != "json" && *protocol != "lc" {
		return fmt.Errorf("unknown -protocol %q: want json or lc", *protocol)
	}
	if *appID == "" || *appKey == "" {
		return errors.New("need -app-id and -app-key (or PUSHD_APP_ID and PUSHD_APP_KEY: . ./data/dev-app.env)")
	}
	if *iid == "" {
		*iid = randomIID()
	}
	if *create {
		if err := createInstallation(ctx, *apiURL, *appID, *appKey, *iid, *channels); err != nil {
			return err
		}
	}
	got := make(chan DevicePush, 16)
	ledger := NewLedger()
	cfg := DeviceConfig{API: *apiURL, AppID: *appID, AppKey: *appKey, InstallationID: *iid, NoAck: *noAck, AckDelay: *ackDelay, Ledger: ledger,
		OnPush: func(p DevicePush) {
			select {
			case got <- p:
			case <-ctx.Done():
			}
		}}
	received := 0
	moved := false // the last connection was moved: ask the router again at once
	for ctx.Err() == nil {
		d, err := dialCLI(ctx, *protocol, cfg, *iid, out)
		if err != nil {
			var ref *RefusedError
			if errors.As(err, &ref) && ref.Code != 1001 && ref.Code != 4029 && ref.Code != 1011 && ref.Code != 4011 {
				return err // refused for good (unauthorized, not an own-channel installation, ...)
			}
			wait := 2 * time.Second
			if errors.As(err, &ref) && ref.Code == 4011 && !moved {
				wait = 0 // moved to another gateway node: the router knows which
			}
			moved = errors.As(err, &ref) && ref.Code == 4011
			fmt.Fprintf(out, "device %s: %v; retrying in %s\n", *iid, err, wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		moved = false
	loop:
		for {
			select {
			case p := <-got:
				if p.Dup { // shown once per notification id: a second frame is a wire duplicate
					fmt.Fprintf(out, "duplicate %s (nid %q shown already; %d wire duplicates)\n", p.ID, p.NID, ledger.WireDuplicates())
					continue
				}
				line, _ := json.Marshal(p)
				fmt.Fprintf(out, "push %s\n", line)
				received++
				if *count > 0 && received >= *count {
					// Give the ack a moment to leave before closing.
					if !*noAck {
						deadline := time.Now().Add(2*time.Second + *ackDelay)
						for !ledger.Acked(p.ID) && time.Now().Before(deadline) {
							time.Sleep(10 * time.Millisecond)
						}
					}
					d.Close()
					return nil
				}
			case <-d.Done():
				code, reason := d.CloseCode()
				fmt.Fprintf(out, "device %s disconnected (%d %s); reconnecting\n", *iid, code, reason)
				moved = code == 4011
				break loop
			case <-ctx.Done():
				d.Close()
				return nil
			}
		}
	}
	return nil
}

// cliConn is one connection of the CLI's device, in either protocol.
type cliConn interface {
	Done() <-chan struct{}
	CloseCode() (int, string)
	Close()
}

// dialCLI connects the CLI's device through the router of protocol, and says so on out.
func dialCLI(ctx context.Context, protocol string, cfg DeviceConfig, iid string, out io.Writer) (cliConn, error) {
	if protocol == "lc" {
		// The original SDK pings every 180s (HeartBeatPolicy.java).
		d, err := DialLCDevice(ctx, LCDeviceConfig{DeviceConfig: cfg, PingEvery: 180 * time.Second})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "device %s connected (the original's protocol, lc.protobuf2.1)\n", iid)
		return d, nil
	}
	d, hello, err := DialDevice(ctx, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "device %s connected (protocol v%d, heartbeat %gs, %d cached pushes follow)\n", iid, hello.V, hello.Heartbeat, hello.Offline)
	return d, nil
}

func createInstallation(ctx context.Context, api, appID, appKey, iid, channels string) error {
	body := map[string]any{"deviceType": "android", "installationId": iid}
	if channels != "" {
		body["channels"] = splitComma(channels)
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/1.1/installations", bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("X-SVC-Id", appID)
	req.Header.Set("X-SVC-Key", appKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot create the installation: %w", err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("cannot create the installation: %d %s", resp.StatusCode, rb)
	}
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// randomIID is a new installationId in the SDKs' UUID form.
func randomIID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
