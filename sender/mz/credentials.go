package mz

import (
	"encoding/json"
	"errors"

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
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "appId and appSecret")
	switch {
	case err != nil:
	case j.AppID == "" || j.AppSecret == "":
		err = errors.New("appId and appSecret are required")
	case !vendor.Digits(j.AppID.String()):
		err = errors.New("appId must be Meizu's numeric app id")
	default:
		err = vendor.CheckURLs(j.Endpoint)
	}
	return j, err
}
