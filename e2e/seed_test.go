package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/store/pebble"
)

// prepareData creates, in data's embedded store (where `pushd serve --data data` opens it),
// an app with APNs token credentials the simulator trusts and n iOS installations subscribed
// to channel ch, before any pushd runs. It returns a client for the app (its base URL still
// empty) and the installations' device tokens.
func prepareData(t *testing.T, data string, s *pushsim, settings push.AppSettings, n int, ch string) (*client, []string) {
	t.Helper()
	ctx := context.Background()
	p8, err := os.ReadFile(filepath.Join(s.dir, "AuthKey_"+simKeyID+".p8"))
	if err != nil {
		t.Fatal(err)
	}
	cred, err := json.Marshal(apns.CredentialsJSON{
		DefaultTopic: simTopic,
		Teams:        []apns.TeamKey{{TeamID: simTeamID, KeyID: simKeyID, P8: string(p8)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := apns.ParseCredentials(cred); err != nil {
		t.Fatalf("credentials rejected: %v", err)
	}
	now := time.Now()
	app := api.NewApp("e2e", settings, now)
	app.Credentials = map[string]json.RawMessage{"apns": cred}

	st, err := pebble.Open(filepath.Join(data, "store"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := st.CreateApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	tokens := make([]string, n)
	insts := make([]push.Installation, n)
	ts := push.FormatTime(now)
	for i := range insts {
		tokens[i] = fmt.Sprintf("%064x", 0xe2e0000000+i)
		oid := fmt.Sprintf("e2e%021d", i)
		// What the API stores for {"deviceType":"ios","deviceToken":...,"channels":[ch]}, written
		// directly: encoding 20,000 maps costs seconds under -race. ch and ts need no escaping.
		doc := fmt.Appendf(nil, `{"channels":[%q],"createdAt":%q,"deviceToken":%q,"deviceType":"ios","objectId":%q,"updatedAt":%q}`,
			ch, ts, tokens[i], oid, ts)
		insts[i] = push.Installation{
			Route: push.Route{
				ObjectID: oid, DeviceType: push.DeviceIOS, DeviceToken: tokens[i],
				Channels: []string{ch}, UpdatedAt: now.UnixMilli(),
			},
			CreatedAt: now.UnixMilli(),
			Doc:       doc,
		}
	}
	if err := st.SeedInstallations(app.ID, settings.Buckets, insts); err != nil {
		t.Fatal(err)
	}
	return newClient("", app.ID, app.AppKey, app.MasterKey), tokens
}

// deliveries compares the simulator's accepted pushes per token with the tokens that should
// each have got want pushes at least: it returns the tokens that got fewer, the pushes beyond
// want in total (duplicates), and the tokens that got pushes but were not targets.
func deliveries(perToken map[string]int64, tokens []string, want int64) (short []string, dups int64, strangers []string) {
	seen := make(map[string]bool, len(tokens))
	for _, tok := range tokens {
		seen[tok] = true
		c := perToken[tok]
		if c < want {
			short = append(short, tok)
		} else {
			dups += c - want
		}
	}
	for tok := range perToken {
		if !seen[tok] {
			strangers = append(strangers, tok)
		}
	}
	return short, dups, strangers
}
