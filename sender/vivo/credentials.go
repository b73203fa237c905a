package vivo

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one vivo configuration of App.Credentials["vivo"], keyed by profile name:
//
//	{"_default": {"appId": "10004", "appKey": "…", "appSecret": "…"}}
//
// appId is vivo's numeric app id (a JSON string or number); endpoint overrides the host.
type ProfileJSON struct {
	AppID     json.Number `json:"appId"`
	AppKey    string      `json:"appKey"`
	AppSecret string      `json:"appSecret"`
	Endpoint  string      `json:"endpoint,omitempty"`
}

// Credentials are an app's parsed vivo profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["vivo"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["vivo"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelVivo, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with appId, appKey and the app secret")
	}
	if j.AppID == "" || j.AppKey == "" || j.AppSecret == "" {
		return j, errors.New("appId, appKey and the app secret are required")
	}
	if n, err := strconv.ParseUint(j.AppID.String(), 10, 63); err != nil || n == 0 {
		return j, errors.New("appId must be the numeric vivo app id")
	}
	if j.Endpoint != "" {
		if p, err := url.Parse(j.Endpoint); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return j, fmt.Errorf("%q is not an http(s) URL", j.Endpoint)
		}
	}
	return j, nil
}
