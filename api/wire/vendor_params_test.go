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

// TestWireOppoParams: data.oppo's category and notify_level are checked at intake.
func TestWireOppoParams(t *testing.T) {
	runBad(t, false, []badCase{
		{"oppo notify_level 3", "", `{"data":{"alert":"x","oppo":{"notify_level":3}}}`, push.CodeValidation, "data.oppo.notify_level must be 1, 2 or 16"},
		{"oppo notify_level string", "", `{"data":{"alert":"x","oppo":{"notify_level":"2"}}}`, push.CodeInvalidType, "data.oppo.notify_level"},
		{"oppo category", "", `{"data":{"alert":"x","oppo":{"category":"Im"}}}`, push.CodeValidation, "data.oppo.category must be an upper-case category name"},
	})
	if _, perr := DecodePush([]byte(`{"data":{"alert":"x","oppo":{"category":"IM","notify_level":16}}}`), cn, "", testNow); perr != nil {
		t.Fatal(perr)
	}
}
