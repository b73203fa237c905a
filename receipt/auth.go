package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/pushd/pushd/push"
)

// HeaderHuawei is the header HMS signs its receipts with when the receipt configuration at
// AppGallery Connect has a callback user name and key: "timestamp=<t>;nonce=<n>;value=<v>",
// v = base64(HMAC-SHA256(key, t + n + user)). Honor is taken to sign the same way [unconfirmed].
const HeaderHuawei = "X-HUAWEI-CALLBACK-ID"

// secretField is the profile field of the vendors that sign nothing whose value keys the app's
// receipt token (Token): the credential the vendor and pushd share.
var secretField = map[string]string{
	push.ChannelMi:   "appSecret",
	push.ChannelVivo: "appSecret",
	push.ChannelOppo: "masterSecret",
	push.ChannelMz:   "appSecret",
}

// SecretField names the profile field whose value keys a vendor's receipt token ("" for HMS and
// Honor, which sign their receipts).
func SecretField(vendor string) string { return secretField[vendor] }

// profiles reads the app's credentials of vendor as named profiles of string fields (the
// shapes the sender packages own; only string fields are read here).
func profiles(raw json.RawMessage) []map[string]string {
	var named map[string]map[string]any
	if json.Unmarshal(raw, &named) != nil {
		return nil
	}
	out := make([]map[string]string, 0, len(named))
	for _, p := range named {
		m := make(map[string]string, len(p))
		for k, v := range p {
			if s, ok := v.(string); ok {
				m[k] = s
			}
		}
		out = append(out, m)
	}
	return out
}

// authentic says whether a receipt for app's vendor comes from the vendor: the URL's token
// matches one profile's (Mi, vivo, OPPO, Meizu), or the Huawei header verifies with one
// profile's receiptUser and receiptKey (HMS, Honor). An app without such a profile has no
// receipts.
func authentic(app *push.App, vendor, token string, header func(string) string) bool {
	ps := profiles(app.Credentials[vendor])
	if f := secretField[vendor]; f != "" {
		if token == "" {
			return false
		}
		for _, p := range ps {
			if s := p[f]; s != "" && subtle.ConstantTimeCompare([]byte(Token(s, app.ID)), []byte(token)) == 1 {
				return true
			}
		}
		return false
	}
	h := header(HeaderHuawei)
	if h == "" {
		return false
	}
	var ts, nonce, value string
	for _, part := range strings.Split(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "timestamp":
			ts = v
		case "nonce":
			nonce = v
		case "value":
			value = v // Cut at the first '=': the base64 padding stays
		}
	}
	if ts == "" || nonce == "" || value == "" {
		return false
	}
	for _, p := range ps {
		user, key := p["receiptUser"], p["receiptKey"]
		if user == "" || key == "" {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(HuaweiSignature(key, ts, nonce, user)), []byte(value)) == 1 {
			return true
		}
	}
	return false
}

// HuaweiSignature is the value of HeaderHuawei for timestamp ts and nonce.
func HuaweiSignature(key, ts, nonce, user string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(ts + nonce + user))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
