package vendor

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pushd/pushd/push/render"
	"github.com/pushd/pushd/sender/gateway"
)

// Huawei's Push Kit and Honor's push service (a near copy of it since the split) share these
// pieces of their message: the pass-through data string and the "<seconds>s" ttl.

// ErrBadBody: a message body that is not a render.VendorBody.
var ErrBadBody = errors.New("the message body is not a vendor body")

// PassThroughData is the data string of an HMS or Honor pass-through (silent) message: alert,
// title and the custom attributes in one JSON object.
func PassThroughData(vb *render.VendorBody) (string, error) {
	obj := map[string]json.RawMessage{}
	if len(vb.Custom) > 0 {
		if err := json.Unmarshal(vb.Custom, &obj); err != nil {
			return "", ErrBadBody
		}
	}
	a, _ := json.Marshal(vb.Alert)
	obj["alert"] = a
	if _, own := obj[render.KeyNID]; !own && vb.NotificationID != "" {
		obj[render.KeyNID], _ = json.Marshal(vb.NotificationID)
	}
	if vb.Title != "" {
		t, _ := json.Marshal(vb.Title)
		obj["title"] = t
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "", ErrBadBody
	}
	return string(b), nil
}

// TTLSeconds formats a remaining lifetime as "<seconds>s", rounded up, within 1 s..most.
func TTLSeconds(d, most time.Duration) string {
	d = min(d, most)
	secs := max(int64(math.Ceil(d.Seconds())), 1)
	return strconv.FormatInt(secs, 10) + "s"
}

// StatusReply classifies an HMS or Honor reply whose result code (code, "" when none could be
// read) is not in the vendor's table, by its HTTP status: 401 AUTH; 429 and 5xx RETRY; 403 and
// 404 the app's credentials or URL (stop the pool); 200 without a code RETRY (retrying is
// safe, deleting is not); anything else fails the request. name prefixes the reason.
func StatusReply(name string, status int, code, retryAfter string) gateway.Reply {
	reason := name + " status " + strconv.Itoa(status)
	if code != "" {
		reason = name + " " + clip(code)
	}
	switch {
	case status == http.StatusUnauthorized:
		return gateway.Reply{Kind: gateway.KindAuth, Reason: reason}
	case status == http.StatusTooManyRequests, status >= 500:
		return gateway.Reply{Kind: gateway.KindRetry, Reason: reason, RetryAfter: gateway.ParseRetryAfter(retryAfter, time.Now())}
	case status == http.StatusForbidden, status == http.StatusNotFound:
		return gateway.Reply{Kind: gateway.KindCredentials, Reason: reason}
	case status == http.StatusOK && code == "":
		return gateway.Reply{Kind: gateway.KindRetry, Reason: name + " reply without a result code"}
	}
	return gateway.Reply{Kind: gateway.KindFailed, Reason: reason}
}

// CompactJSON is raw (a custom-attributes object) compacted into a string, as the HMS family's
// data field and Xiaomi's payload field carry it.
func CompactJSON(raw []byte) (string, error) {
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return "", err
	}
	return c.String(), nil
}

// AppendTokenRequest appends an HMS-family send request: head, tokens as a JSON array, the
// members of m (which encodes as a JSON object), and tail, e.g. `{"token":` … `}`.
func AppendTokenRequest(dst []byte, head string, tokens []string, m any, tail string) ([]byte, error) {
	mb, err := json.Marshal(m)
	if err != nil {
		return dst, err
	}
	tb, err := json.Marshal(tokens)
	if err != nil {
		return dst, err
	}
	dst = append(dst, head...)
	dst = append(dst, tb...)
	if len(mb) > 2 {
		dst = append(dst, ',')
		dst = append(dst, mb[1:len(mb)-1]...)
	}
	return append(dst, tail...), nil
}
