package api

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
)

// queryIDs runs GET /1.1/installations with where (master key) and returns the response and
// the sorted objectIds of its results (nil when the status is not 200).
func (e *testEnv) queryIDs(where string) (resp, []string) {
	e.t.Helper()
	r := e.do("GET", "/1.1/installations?"+url.Values{"where": {where}, "limit": {"1000"}}.Encode(), "", e.masterHeaders()...)
	if r.Status != 200 {
		return r, nil
	}
	ids := []string{}
	for _, x := range r.JSON(e.t)["results"].([]any) {
		ids = append(ids, x.(map[string]any)["objectId"].(string))
	}
	slices.Sort(ids)
	return r, ids
}

// wantIDs fails unless where selects exactly want (in any order).
func (e *testEnv) wantIDs(where string, want ...string) {
	e.t.Helper()
	r, got := e.queryIDs(where)
	if r.Status != 200 {
		e.t.Errorf("where %s: got %d %s, want 200", where, r.Status, r.Body)
		return
	}
	want = slices.Clone(want)
	slices.Sort(want)
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		e.t.Errorf("where %s: got %v, want %v", where, got, want)
	}
}

// A $select on channels means "channels holds any of the values" (Parse rewrites it to $in):
// the listing must not read only the first value's channel index.
func TestInstallationQuerySelectOnChannels(t *testing.T) {
	e := newEnv(t)
	var ids []string
	for i := range 4 {
		tag := []string{"even", "odd"}[i%2]
		oid, _ := e.create(fmt.Sprintf(`{"deviceType":"android","installationId":"sel-%d","channels":[%q],"tag":%q}`, i, tag, tag))
		ids = append(ids, oid)
	}
	sel := func(where string) string {
		return `{"channels":{"$select":{"query":{"className":"_Installation","where":` + where + `},"key":"tag"}}}`
	}
	e.wantIDs(sel(`{}`), ids...)
	e.wantIDs(sel(`{"tag":"odd"}`), ids[1], ids[3])
	e.wantIDs(sel(`{"tag":"none"}`))
}
