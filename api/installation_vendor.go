package api

import (
	"strings"

	"github.com/pushd/pushd/push"
)

// checkVendor refuses an installation's vendor that is not a known vendor (push.VendorChannel:
// mi, hms, honor, mz, vivo, oppo, fcm and their spellings) or not one of the app's edition,
// with code 1 as a bad field value. stored is the vendor of the installation as stored ("" for
// a new one): an unchanged stored value is accepted, so a device saved before this rule (or
// before its app changed edition) keeps updating; fan-out routes an unknown stored vendor to
// the own channel and fails a vendor of the other edition with the reason.
func checkVendor(doc map[string]any, ed push.Edition, stored string) *push.Error {
	v, _ := doc[fVendor].(string) // validateDoc checked the type
	if v == "" || v == stored {
		return nil
	}
	ch := push.VendorChannel(v)
	if ch == "" {
		return push.Errorf(push.CodeValidation, "unknown vendor %q: use one of %s", clipValue(v), strings.Join(ed.Vendors(), ", "))
	}
	if !ed.HasChannel(ch) {
		return push.Errorf(push.CodeValidation, "%s", ed.NotInEdition(ch))
	}
	return nil
}

func clipValue(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}
