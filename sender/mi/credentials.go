package mi

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one Xiaomi configuration of App.Credentials["mi"], keyed by profile name:
//
//	{"_default": {"appSecret": "…", "packageName": "com.example.chat", "region": "china"}}
//
// region is china (default), global, ru, in, eu or sgp; endpoint overrides it. channels names
// the extra.channel_id of each message class (Xiaomi's private and public channels).
type ProfileJSON struct {
	AppSecret   string `json:"appSecret"`
	PackageName string `json:"packageName"`
	Region      string `json:"region,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
	// Channels are the notification channels registered with the vendor per message class
	// (vendor.ClassChannels), e.g. {"system": "private_im", "marketing": "promo"}.
	Channels vendor.ClassChannels `json:"channels,omitzero"`
}

// Credentials are an app's parsed Xiaomi profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["mi"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["mi"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelMi, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "the app secret and packageName")
	if err != nil {
		return j, err
	}
	switch _, known := Hosts[j.Region]; {
	case j.AppSecret == "" || j.PackageName == "":
		err = errors.New("the app secret and packageName are required")
	case strings.ContainsAny(j.PackageName, ", "):
		err = errors.New("packageName must be one package name")
	case !known:
		err = fmt.Errorf("region %q is none of china, global, ru, in, eu, sgp", j.Region)
	default:
		if err = vendor.CheckURLs(j.Endpoint); err == nil {
			err = j.Channels.Check()
		}
	}
	return j, err
}
