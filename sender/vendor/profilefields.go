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
