package honor

import (
	"errors"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one Honor configuration of an app's App.Credentials["honor"], which maps
// profile names (`_default` and deviceProfile names) to these:
//
//	{"_default": {"appId": "104455667", "clientId": "…", "clientSecret": "…"},
//	 "beta":     {"appId": "104455668", "clientId": "…", "clientSecret": "…", "endpoint": "https://…", "tokenUrl": "https://…"}}
//
// appId is the {appId} of the send URL; clientId and clientSecret are the OAuth2 client of
// the app's push service (Honor's developer console shows all three).
type ProfileJSON struct {
	AppID        string `json:"appId"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// Endpoint and TokenURL override the process-wide hosts for this profile.
	Endpoint string `json:"endpoint,omitempty"`
	TokenURL string `json:"tokenUrl,omitempty"`
	// ReceiptUser and ReceiptKey authenticate the app's receipts, signed as HMS signs them
	// [unconfirmed for Honor] (package receipt).
	ReceiptUser string `json:"receiptUser,omitempty"`
	ReceiptKey  string `json:"receiptKey,omitempty"`
}

// Credentials are an app's parsed Honor profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["honor"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["honor"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelHonor, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "appId, clientId and the client secret")
	switch {
	case err != nil:
	case j.AppID == "" || j.ClientID == "" || j.ClientSecret == "":
		err = errors.New("appId, clientId and the client secret are required")
	case !vendor.Digits(j.AppID):
		err = errors.New("appId must be the numeric Honor app id")
	case (j.ReceiptUser == "") != (j.ReceiptKey == ""):
		err = errors.New("receiptUser and receiptKey go together")
	default:
		err = vendor.CheckURLs(j.Endpoint, j.TokenURL)
	}
	return j, err
}
