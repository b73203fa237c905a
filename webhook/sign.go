package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries a request's timestamp and signature: "t=<unix seconds>,v1=<hex>".
const SignatureHeader = "X-Pushd-Signature"

// Sign returns the SignatureHeader value of body sent at t: v1 is the hex HMAC-SHA256, keyed
// with the app's secret, of "<t>.<body>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a SignatureHeader value against body and secret, and that its timestamp is
// within tolerance of now (0: any age), which bounds replays.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return errors.New("malformed signature header")
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return errors.New("signature mismatch")
	}
	if age := now.Sub(time.Unix(unix, 0)); tolerance > 0 && (age > tolerance || age < -tolerance) {
		return errors.New("signature timestamp outside the tolerance")
	}
	return nil
}
