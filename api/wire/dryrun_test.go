package wire

import (
	"testing"
	"time"

	"github.com/pushd/pushd/push"
)

// TestWireDryRun: dry_run (a pushd extension) is read on both push endpoints as true or false;
// null or absent is false; any other value is a type error naming it.
func TestWireDryRun(t *testing.T) {
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	decode := map[string]func(string) (*Common, *push.Error){
		pathPush: func(extra string) (*Common, *push.Error) {
			r, perr := DecodePush([]byte(`{"data":{"alert":"x"}`+extra+`}`), push.EditionChina, "", now)
			if perr != nil {
				return nil, perr
			}
			return &r.Common, nil
		},
		pathDevices: func(extra string) (*Common, *push.Error) {
			r, perr := DecodePushDevices([]byte(`{"data":{"alert":"x"},"device_type":"ios","device_ids":["a"]`+extra+`}`), push.EditionChina, "", now)
			if perr != nil {
				return nil, perr
			}
			return &r.Common, nil
		},
	}
	for path, dec := range decode {
		for _, tc := range []struct {
			extra string
			want  bool
		}{
			{``, false}, {`,"dry_run":true`, true}, {`,"dry_run":false`, false}, {`,"dry_run":null`, false},
		} {
			c, perr := dec(tc.extra)
			if perr != nil || c.DryRun != tc.want {
				t.Errorf("%s %s: got %+v, %v; want dry run %v", path, tc.extra, c, perr, tc.want)
			}
		}
		for _, bad := range []string{`"true"`, `1`, `"yes"`, `{}`} {
			_, perr := dec(`,"dry_run":` + bad)
			if perr == nil || perr.Code != push.CodeInvalidType || perr.Message != "dry_run must be true or false" {
				t.Errorf("%s dry_run %s: got %v, want code %d naming dry_run", path, bad, perr, push.CodeInvalidType)
			}
		}
	}
}
