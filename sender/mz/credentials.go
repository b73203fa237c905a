package mz

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one Meizu configuration of App.Credentials["mz"], keyed by profile name:
//
//	{"_default": {"appId": "100999", "appSecret": "…"}}
//
// appId is Meizu's numeric app id (a JSON string or number); endpoint overrides the host.
type ProfileJSON struct {
	AppID     json.Number `json:"appId"`
	AppSecret string      `json:"appSecret"`
	Endpoint  string      `json:"endpoint,omitempty"`
}

// Credentials are an app's parsed Meizu profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["mz"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["mz"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelMz, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with appId and appSecret")
	}
	if j.AppID == "" || j.AppSecret == "" {
		return j, errors.New("appId and appSecret are required")
	}
	for _, c := range j.AppID {
		if c < '0' || c > '9' {
			return j, errors.New("appId must be Meizu's numeric app id")
		}
	}
	if j.Endpoint != "" {
		if p, err := url.Parse(j.Endpoint); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return j, fmt.Errorf("%q is not an http(s) URL", j.Endpoint)
		}
	}
	return j, nil
}
