package mi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one Xiaomi configuration of App.Credentials["mi"], keyed by profile name:
//
//	{"_default": {"appSecret": "…", "packageName": "com.example.chat", "region": "china"}}
//
// region is china (default), global, ru, in, eu or sgp; endpoint overrides it.
type ProfileJSON struct {
	AppSecret   string `json:"appSecret"`
	PackageName string `json:"packageName"`
	Region      string `json:"region,omitempty"`
	Endpoint    string `json:"endpoint,omitempty"`
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
	var j ProfileJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with the app secret and packageName")
	}
	if j.AppSecret == "" || j.PackageName == "" {
		return j, errors.New("the app secret and packageName are required")
	}
	if strings.ContainsAny(j.PackageName, ", ") {
		return j, errors.New("packageName must be one package name")
	}
	if _, ok := Hosts[j.Region]; !ok {
		return j, fmt.Errorf("region %q is none of china, global, ru, in, eu, sgp", j.Region)
	}
	if j.Endpoint != "" {
		if p, err := url.Parse(j.Endpoint); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return j, fmt.Errorf("%q is not an http(s) URL", j.Endpoint)
		}
	}
	return j, nil
}
