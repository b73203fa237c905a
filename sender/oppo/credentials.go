package oppo

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one OPPO configuration of App.Credentials["oppo"], keyed by profile name:
//
//	{"_default": {"appKey": "…", "masterSecret": "…"}}
//
// endpoint and intlEndpoint override OPPO's China and overseas hosts for this profile.
type ProfileJSON struct {
	AppKey       string `json:"appKey"`
	MasterSecret string `json:"masterSecret"`
	Endpoint     string `json:"endpoint,omitempty"`
	IntlEndpoint string `json:"intlEndpoint,omitempty"`
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
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with appKey and the master secret")
	}
	if j.AppKey == "" || j.MasterSecret == "" {
		return j, errors.New("appKey and the master secret are required")
	}
	for _, u := range []string{j.Endpoint, j.IntlEndpoint} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return j, fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	return j, nil
}
