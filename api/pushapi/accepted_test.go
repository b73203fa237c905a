package pushapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

func TestPushAcceptedAnswerMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2031, 2, 3, 4, 5, 6, 789_000_000, time.FixedZone("x", -7200))
	for _, oid := range []string{"0a1b2c3d4e5f60718293a4b5", "", `q"`, `\`, "<&>", "\x7f", "é", "\u2029", "\xff"} {
		want, _ := json.Marshal(struct {
			ObjectID  string `json:"objectId"`
			CreatedAt string `json:"createdAt"`
		}{oid, push.FormatTime(at)})
		if got := appendAccepted(nil, oid, at); string(got) != string(want) {
			t.Errorf("appendAccepted(%q) = %s, want %s", oid, got, want)
		}
	}
}
