package wire

import (
	"testing"

	"github.com/pushd/pushd/push"
)

// TestWireVivoParams: data.vivo's classification and category are checked at intake.
func TestWireVivoParams(t *testing.T) {
	runBad(t, false, []badCase{
		{"vivo classification 2", "", `{"data":{"alert":"x","vivo":{"classification":2}}}`, push.CodeValidation, "data.vivo.classification must be 0 (operational) or 1 (system)"},
		{"vivo classification string", "", `{"data":{"alert":"x","vivo":{"classification":"1"}}}`, push.CodeInvalidType, "data.vivo.classification"},
		{"vivo category lower case", "", `{"data":{"alert":"x","vivo":{"category":"im"}}}`, push.CodeValidation, "data.vivo.category must be an upper-case category name"},
		{"vivo category number", "", `{"data":{"alert":"x","vivo":{"category":1}}}`, push.CodeInvalidType, "data.vivo.category"},
	})
	for _, good := range []string{`{"data":{"alert":"x","vivo":{"classification":1,"category":"IM","pushMode":0}}}`,
		`{"data":{"alert":"x","classification":7,"category":"any custom value"}}`} {
		if _, perr := DecodePush([]byte(good), cn, "", testNow); perr != nil {
			t.Errorf("%s: %v", good, perr)
		}
	}
}
