package vivo

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/sender/vendor"
)

// tokenLife is an authToken's validity (gateways.md §6.1).
const tokenLife = 24 * time.Hour

// Sign is vivo's auth sign: lowercase hex MD5 of appId + appKey + timestamp + appSecret, each
// trimmed (gateways.md §6.1).
func Sign(appID, appKey, timestamp, appSecret string) string {
	sum := md5.Sum([]byte(strings.TrimSpace(appID) + strings.TrimSpace(appKey) + strings.TrimSpace(timestamp) + strings.TrimSpace(appSecret)))
	return hex.EncodeToString(sum[:])
}

type authRequest struct {
	AppID     json.Number `json:"appId"`
	AppKey    string      `json:"appKey"`
	Timestamp int64       `json:"timestamp"`
	Sign      string      `json:"sign"`
}

// mint obtains an authToken from /message/auth. vivo's auth codes 10200–10207 mean our keys
// or clock are refused (the pool stops); 10250 (auth rate) and transport errors are transient.
func (cl *Client) mint(ctx context.Context) (string, time.Duration, error) {
	ts := cl.now().UnixMilli()
	body, _ := json.Marshal(authRequest{AppID: cl.p.AppID, AppKey: cl.p.AppKey, Timestamp: ts,
		Sign: Sign(cl.p.AppID.String(), cl.p.AppKey, strconv.FormatInt(ts, 10), cl.p.AppSecret)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cl.base+"/message/auth", bytes.NewReader(body))
	if err != nil {
		return "", 0, &vendor.CredError{Reason: "bad vivo endpoint"}
	}
	req.Header = http.Header{"Content-Type": {"application/json"}}
	res, err := cl.hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("cannot reach the vivo auth endpoint: %w", err)
	}
	defer vendor.DrainClose(res.Body)
	data, err := vendor.ReadReply(res.Body)
	if err != nil {
		return "", 0, fmt.Errorf("cannot read the vivo auth reply: %w", err)
	}
	r, rep, ok := parse(res.StatusCode, data, "")
	switch {
	case ok && r.AuthToken != "":
		return r.AuthToken, tokenLife, nil
	case ok:
		return "", 0, fmt.Errorf("vivo auth reply without an authToken")
	case r.Result != nil && *r.Result >= 10200 && *r.Result <= 10207:
		return "", 0, &vendor.CredError{Reason: rep.Reason}
	}
	return "", 0, fmt.Errorf("vivo auth answered %s", rep.Reason)
}
