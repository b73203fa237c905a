package vivo

import (
	"encoding/json"
	"errors"
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
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "appId, appKey and the app secret")
	if err != nil {
		return j, err
	}
	switch n, nerr := strconv.ParseUint(j.AppID.String(), 10, 63); {
	case j.AppID == "" || j.AppKey == "" || j.AppSecret == "":
		err = errors.New("appId, appKey and the app secret are required")
	case nerr != nil || n == 0:
		err = errors.New("appId must be the numeric vivo app id")
	default:
		err = vendor.CheckURLs(j.Endpoint)
	}
	return j, err
}
