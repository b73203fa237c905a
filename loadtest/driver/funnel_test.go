package driver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pushd/pushd/push"
)

// The driver reads a record's funnel as the tallies its expectations use, and reports a
// broken invariant and a done record with targets pending.
func TestDriverReadsTheRecordFunnel(t *testing.T) {
	var rec record
	body := `{"objectId":"r1","status":"done","pending":1,"counts":{"byChannel":{
		"hms":{"targets":4,"sent":2,"arrived":1,"failed":2,"failedBy":{"invalid_token":1,"rejected":1},"expired":0,"deferred":0,"pending":0,"invalidTokens":1,"arrivals":1},
		"direct":{"targets":5,"sent":3,"arrived":0,"failed":0,"failedBy":{},"expired":0,"deferred":0,"pending":1,"invalidTokens":0,"arrivals":0}}}}`
	if err := json.Unmarshal([]byte(body), &rec); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Counts.ByChannel[push.ChannelHMS], (push.Tally{Targets: 4, Sent: 2, Failed: 1, InvalidTokens: 1, Arrivals: 1}); !got.Equal(want) {
		t.Errorf("hms tally %+v, want %+v", got, want)
	}
	ps := rec.funnelProblems()
	if len(ps) != 2 || !strings.Contains(ps[0], "funnel of channel direct") || !strings.Contains(ps[1], "1 targets pending") {
		t.Errorf("problems %q, want the direct funnel (5 != 3 + 1) and the pending target", ps)
	}
}
