package vendor

import (
	"regexp"
	"testing"
)

// Every vendor accepts the one notify id: 1..2147483647 (vivo refuses 0), and Meizu's key is
// at most 8 of [0-9a-zA-Z_-]; the same nid gives the same id, different ones differ.
func TestNotifyIDInEveryVendorsRange(t *testing.T) {
	key := regexp.MustCompile(`^[0-9a-zA-Z_-]{1,8}$`)
	seen := map[int64]string{}
	for _, nid := range []string{"a", "idAcross1", "zzzzzzzzzzzzzzzz", "0000000000000000", "n7GdQ2", "Z"} {
		id := NotifyID(nid)
		if id < 1 || id > 2147483647 || NotifyID(nid) != id {
			t.Errorf("NotifyID(%q) = %d", nid, id)
		}
		if k := NotifyKey(nid); !key.MatchString(k) {
			t.Errorf("NotifyKey(%q) = %q", nid, k)
		}
		if o, dup := seen[id]; dup {
			t.Errorf("%q and %q share notify id %d", nid, o, id)
		}
		seen[id] = nid
	}
	if NotifyID("") != 0 || NotifyKey("") != "" {
		t.Error("an empty nid gives an id")
	}
}
