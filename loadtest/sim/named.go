package sim

import (
	"encoding/json"
	"fmt"
	"os"
)

// Named is one simulator started by name (StartNamed), as a client in another process needs
// it: where it listens, the certificate to trust and an app's credentials for its channel.
type Named struct {
	Channel string `json:"channel"`
	URL     string `json:"url"`
	CertPEM string `json:"certPem"`
	// Credentials is the channel's app credentials JSON, endpoints included, as
	// push.App.Credentials[Channel] holds it (PUT /admin/apps/<id>/credentials/<channel>).
	Credentials json.RawMessage `json:"credentials"`
	// Pid is the process serving the simulator.
	Pid int `json:"pid"`

	close func() error
}

// Close stops the simulator.
func (n *Named) Close() error { return n.close() }

// NamedChannels are the channels StartNamed knows.
var NamedChannels = []string{"apns", "hms", "mi", "vivo", "oppo", "mz", "honor"}

// NamedAPNs* are the topic (the Android package name too) and token-auth key of the app
// StartNamed registers with the APNs simulator.
const (
	NamedAPNsTopic  = "com.example.chat"
	NamedAPNsKeyID  = "KEY1234567"
	NamedAPNsTeamID = "TEAM123456"
)

// StartNamed starts the simulator of channel on a loopback port with one app registered,
// without the per-token ledger (NoTokenStats): for benchmarks, which run it in a child
// process so that their own CPU is the sender's alone. The vendor apps are the ones pushsim
// registers (startVendors); the APNs app has one team key (NamedAPNs*).
func StartNamed(channel string) (*Named, error) {
	if channel == "apns" {
		return startNamedAPNs()
	}
	const addr = "127.0.0.1:0"
	var f vendorFlags
	switch channel {
	case "hms":
		f.hms = addr
	case "mi":
		f.mi = addr
	case "vivo":
		f.vivo = addr
	case "oppo":
		f.oppo = addr
	case "mz":
		f.mz = addr
	case "honor":
		f.honor = addr
	default:
		return nil, fmt.Errorf("cannot start simulator %q: unknown channel (known: %v)", channel, NamedChannels)
	}
	f.pkg = NamedAPNsTopic
	v, err := startVendors(f, Knobs{}, true, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot start simulator %s: %w", channel, err)
	}
	creds, err := json.Marshal(v.creds[channel])
	if err != nil {
		_ = v.Close()
		return nil, fmt.Errorf("cannot encode the credentials of simulator %s: %w", channel, err)
	}
	url, _ := v.creds[channel]["_default"].(map[string]any)["endpoint"].(string)
	return &Named{Channel: channel, URL: url, CertPEM: string(v.certs[0]), Credentials: creds, Pid: os.Getpid(), close: v.Close}, nil
}

func startNamedAPNs() (*Named, error) {
	s, err := NewAPNs(APNsConfig{NoTokenStats: true})
	if err != nil {
		return nil, fmt.Errorf("cannot start simulator apns: %w", err)
	}
	p8, err := s.NewKey(NamedAPNsKeyID, NamedAPNsTeamID)
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cannot register a key with simulator apns: %w", err)
	}
	creds, err := json.Marshal(map[string]any{
		"defaultTopic": NamedAPNsTopic,
		"teams":        []map[string]string{{"teamId": NamedAPNsTeamID, "keyId": NamedAPNsKeyID, "p8": string(p8)}},
	})
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("cannot encode the credentials of simulator apns: %w", err)
	}
	return &Named{Channel: "apns", URL: s.URL(), CertPEM: string(s.CertPEM()), Credentials: creds, Pid: os.Getpid(), close: s.Close}, nil
}
