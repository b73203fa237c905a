package oppo

import (
	"errors"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one OPPO configuration of App.Credentials["oppo"], keyed by profile name:
//
//	{"_default": {"appKey": "…", "masterSecret": "…"}}
//
// endpoint and intlEndpoint override OPPO's China and overseas hosts for this profile; channels
// names the channel_id of each message class (an OPPO private channel for system pushes).
type ProfileJSON struct {
	AppKey       string `json:"appKey"`
	MasterSecret string `json:"masterSecret"`
	Endpoint     string `json:"endpoint,omitempty"`
	IntlEndpoint string `json:"intlEndpoint,omitempty"`
	// Channels are the notification channels registered with the vendor per message class
	// (vendor.ClassChannels), e.g. {"system": "private_im", "marketing": "promo"}.
	Channels vendor.ClassChannels `json:"channels,omitzero"`
}

// Credentials are an app's parsed OPPO profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["oppo"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["oppo"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelOppo, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "appKey and the master secret")
	switch {
	case err != nil:
	case j.AppKey == "" || j.MasterSecret == "":
		err = errors.New("appKey and the master secret are required")
	default:
		if err = vendor.CheckURLs(j.Endpoint, j.IntlEndpoint); err == nil {
			err = j.Channels.Check()
		}
	}
	return j, err
}
