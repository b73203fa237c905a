package vendor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
)

// What the vendor packages' profile parsers (handed to LoadProfiles) share.

// DecodeProfile decodes one profile's JSON object into a T; its error says the object must
// hold want (e.g. "appId and the app secret").
func DecodeProfile[T any](raw []byte, want string) (T, error) {
	var j T
	if err := json.Unmarshal(raw, &j); err != nil {
		return j, errors.New("it must be a JSON object with " + want)
	}
	return j, nil
}

// Digits reports whether s holds only the decimal digits 0-9.
func Digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// CheckURLs returns an error naming the first of urls that is set and not an http(s) URL
// with a host; empty ones are not set.
func CheckURLs(urls ...string) error {
	for _, u := range urls {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	return nil
}

// ClassChannels are a profile's notification channel ids by message class (the profile field
// "channels" of mi and oppo): the vendor channel a push of that class is sent on when neither
// the push nor its data names one (docs/decisions.md, "Message class (issue 20 item 3)").
type ClassChannels struct {
	System    string `json:"system,omitempty"`
	Marketing string `json:"marketing,omitempty"`
}

// maxChannelID bounds a channel id: Android's and the vendors' ids are short identifiers.
const maxChannelID = 200

// Check refuses an empty-looking or overlong id.
func (c ClassChannels) Check() error {
	for _, id := range []string{c.System, c.Marketing} {
		if len(id) > maxChannelID {
			return fmt.Errorf("channels: a channel id is longer than %d bytes", maxChannelID)
		}
	}
	return nil
}

// For is the channel id of class ("" is system); "" when the profile names none.
func (c ClassChannels) For(class string) string {
	if class == "marketing" {
		return c.Marketing
	}
	return c.System
}
