package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Path is where the API serves receipts: Path + "<vendor>/<appId>" (HMS, Honor: the URL the
// operator enters at the vendor's console) or + "<vendor>/<appId>/<token>" (the URL the senders
// put in each request of the vendors that sign nothing).
const Path = "/receipts/"

// Param is the callback parameter (Xiaomi callback.param, vivo callback.param, OPPO
// call_back_parameter, Meizu callback.param, HMS/Honor biTag) that names the push a receipt is
// about: "<record objectId>:<notificationId>", at most 24+1+16 bytes (the vendors allow 64).
func Param(pushID, notificationID string) string {
	return pushID + ":" + notificationID
}

// parseParam reads a Param; ok is false when it names no push record.
func parseParam(p string) (pushID, notificationID string, ok bool) {
	pushID, notificationID, _ = strings.Cut(p, ":")
	return pushID, notificationID, pushID != "" && len(pushID) <= 64
}

// Token is the app's receipt token for a vendor profile whose secret is secret: the first 16
// bytes (hex) of HMAC-SHA256(secret, "pushd receipts <appId>"). The vendors that sign nothing
// carry it in the callback URL; only pushd and the vendor (over TLS) see it, and it changes with
// the profile's secret.
func Token(secret, appID string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("pushd receipts " + appID))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// Callback is the callback URL and parameter of a request of push pushID (notification
// notificationID) to vendor for app appID, or "", "" when base is "" or the URL would be longer
// than maxURL (the vendor's limit): that request then asks for no receipt.
func Callback(base, vendor, appID, secret string, maxURL int, pushID, notificationID string) (url, param string) {
	url = CallbackURL(base, vendor, appID, secret)
	if url == "" || len(url) > maxURL {
		return "", ""
	}
	return url, Param(pushID, notificationID)
}

// CallbackURL is the receipt URL of a request to vendor for app appID: base (the API's public
// URL) + Path + vendor/appId/token. base "" asks for no receipts and gives "".
func CallbackURL(base, vendor, appID, secret string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + Path + vendor + "/" + appID + "/" + Token(secret, appID)
}
