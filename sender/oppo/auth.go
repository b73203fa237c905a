package oppo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/sender/gateway"
	"github.com/pushd/pushd/sender/vendor"
)

// tokenLife is an auth_token's validity (gateways.md §7.1).
const tokenLife = 24 * time.Hour

// Sign is OPPO's auth sign: lowercase hex SHA-256 of appKey + timestamp + masterSecret.
func Sign(appKey, timestamp, masterSecret string) string {
	sum := sha256.Sum256([]byte(appKey + timestamp + masterSecret))
	return hex.EncodeToString(sum[:])
}

// minter returns the MintFunc of base's /server/v1/auth: each region's host issues its own
// auth_token (whether one host's token works at the other is unconfirmed). App-level refusals
// (app_key, sign, timestamp, ...) stop the pool; the rest is transient.
func (cl *Client) minter(base string) vendor.MintFunc {
	return func(ctx context.Context) (string, time.Duration, error) { return cl.mint(ctx, base) }
}

func (cl *Client) mint(ctx context.Context, base string) (string, time.Duration, error) {
	ts := strconv.FormatInt(cl.now().UnixMilli(), 10)
	form := url.Values{"app_key": {cl.p.AppKey}, "timestamp": {ts}, "sign": {Sign(cl.p.AppKey, ts, cl.p.MasterSecret)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/server/v1/auth", strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, &vendor.CredError{Reason: "bad oppo endpoint"}
	}
	req.Header = http.Header{"Content-Type": formContentType}
	res, err := cl.hc.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("cannot reach the oppo auth endpoint: %w", err)
	}
	defer vendor.DrainClose(res.Body)
	data, err := vendor.ReadReply(res.Body)
	if err != nil {
		return "", 0, fmt.Errorf("cannot read the oppo auth reply: %w", err)
	}
	r, rep, ok := parse(res.StatusCode, data, "")
	if ok {
		var d authData
		if json.Unmarshal(r.Data, &d) != nil || d.AuthToken == "" {
			return "", 0, errors.New("oppo auth reply without an auth_token")
		}
		return d.AuthToken, tokenLife, nil
	}
	if rep.Kind == gateway.KindCredentials || rep.Kind == gateway.KindFailed {
		return "", 0, &vendor.CredError{Reason: rep.Reason}
	}
	return "", 0, fmt.Errorf("oppo auth answered %s", rep.Reason)
}
