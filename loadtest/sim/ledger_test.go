package sim

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A device shows a notification once per notification id, whichever message (push record)
// or channel frame brings it; every further frame of a shown id is a wire duplicate.
func TestLedgerShowsOncePerNotificationID(t *testing.T) {
	l := NewLedger()
	frames := []struct {
		id, nid string
		dup     bool
	}{
		{"m1", "n1", false},
		{"m1", "n1", true}, // the same message again (a reconnect before its ack was stored)
		{"m2", "n1", true}, // another push of the same notification id
		{"m3", "", false},  // no notification id: shown per message id
		{"m3", "", true},
		{"m4", "n2", false},
	}
	for i, f := range frames {
		if dup := l.add(f.id, f.nid, json.RawMessage(`{}`)); dup != f.dup {
			t.Errorf("frame %d (%s, %s): dup %v, want %v", i, f.id, f.nid, dup, f.dup)
		}
	}
	if got, want := l.Shown(), []string{"n1", "m3", "n2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shown %q, want %q", got, want)
	}
	if d := l.WireDuplicates(); d != 3 {
		t.Errorf("%d wire duplicates, want 3", d)
	}
	if l.Times("m1") != 2 || l.NID("m2") != "n1" || len(l.IDs()) != 4 {
		t.Errorf("per-message counts: m1 %d times, m2 nid %q, %d ids", l.Times("m1"), l.NID("m2"), len(l.IDs()))
	}
	if got := lcNID(json.RawMessage(`{"_nid":"n9","alert":"x"}`)); got != "n9" {
		t.Errorf("lcNID = %q", got)
	}
}
