package hms

import (
	"errors"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/vendor"
)

// ProfileJSON is one HMS configuration of an app's App.Credentials["hms"], which maps profile
// names (`_default` and deviceProfile names) to these:
//
//	{"_default": {"appId": "104455667", "appSecret": "…"},
//	 "beta":     {"appId": "104455668", "appSecret": "…", "endpoint": "https://…", "tokenUrl": "https://…"}}
//
// appId is the OAuth2 client id and the {appId} of the send URL.
type ProfileJSON struct {
	AppID     string `json:"appId"`
	AppSecret string `json:"appSecret"`
	// Endpoint and TokenURL override the process-wide hosts for this profile.
	Endpoint string `json:"endpoint,omitempty"`
	TokenURL string `json:"tokenUrl,omitempty"`
	// ReceiptUser and ReceiptKey are the callback user name and key of the app's receipt
	// configuration at AppGallery Connect: pushd verifies each receipt's X-HUAWEI-CALLBACK-ID
	// with them (package receipt). ReceiptID selects that configuration in each message
	// (android.receipt_id) when the app has several.
	ReceiptUser string `json:"receiptUser,omitempty"`
	ReceiptKey  string `json:"receiptKey,omitempty"`
	ReceiptID   string `json:"receiptId,omitempty"`
}

// Credentials are an app's parsed HMS profiles.
type Credentials struct {
	*vendor.Profiles[ProfileJSON]
}

// ParseCredentials validates an upload of App.Credentials["hms"]; errors never hold secrets.
func ParseCredentials(raw []byte) error {
	_, err := Load(raw)
	return err
}

// Load parses raw (App.Credentials["hms"]).
func Load(raw []byte) (*Credentials, error) {
	p, err := vendor.LoadProfiles(push.ChannelHMS, raw, parseProfile)
	if err != nil {
		return nil, err
	}
	return &Credentials{p}, nil
}

func parseProfile(raw []byte) (ProfileJSON, error) {
	j, err := vendor.DecodeProfile[ProfileJSON](raw, "appId and the app secret")
	switch {
	case err != nil:
	case j.AppID == "" || j.AppSecret == "":
		err = errors.New("appId and the app secret are required")
	case !vendor.Digits(j.AppID):
		err = errors.New("appId must be the numeric HMS app id")
	case (j.ReceiptUser == "") != (j.ReceiptKey == ""):
		err = errors.New("receiptUser and receiptKey go together")
	default:
		err = vendor.CheckURLs(j.Endpoint, j.TokenURL)
	}
	return j, err
}
