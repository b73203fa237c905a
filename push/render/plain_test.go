package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/api/jsondoc"
)

// FuzzRenderPlainTokens: the fast paths (jsondoc.PlainToken for a string member, writing a
// plain token as it is) give what encoding/json gives for every token they take.
func FuzzRenderPlainTokens(f *testing.F) {
	for _, s := range []string{`"hello"`, `"Sale starts now: 20% off"`, `"中文"`, `"a\"b"`, `"a\\nb"`, `"\u00e9"`,
		`"` + "\xff" + `"`, `"tab` + "\t" + `"`, `""`, `"`, `12`, `-0`, `007`, `-`, `1e3`, `1.5`, `true`, `null`,
		`false`, ` "x"`, `"x" `, `{"a": 1}`, `[1, 2]`, `123456789012345678`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if s, ok := jsondoc.PlainToken(raw); ok {
			var want string
			if err := json.Unmarshal(raw, &want); err != nil || s != want {
				t.Fatalf("PlainToken(%q) = %q, encoding/json gives %q, %v", raw, s, want, err)
			}
		}
		var fast, slow bytes.Buffer
		ferr := newObj(&fast).raw("k", raw)
		sw := newObj(&slow)
		sw.key("k")
		serr := sw.compact(raw)
		if (ferr == nil) != (serr == nil) || ferr == nil && fast.String() != slow.String() {
			t.Fatalf("raw(%q) = %q, %v; compacted by encoding/json: %q, %v", raw, fast.String(), ferr, slow.String(), serr)
		}
	})
}

func TestRenderPlainTokensTakeTheCommonMembers(t *testing.T) {
	for _, s := range []string{`"Sale starts now: 20% off everything"`, `"中文标题"`, `"Increment"`} {
		if _, ok := jsondoc.PlainToken([]byte(s)); !ok {
			t.Errorf("PlainToken(%s) not taken", s)
		}
	}
	for _, s := range []string{`1`, `-42`, `true`, `null`, `"default"`} {
		if !isPlainString([]byte(s)) && !isPlainLiteral([]byte(s)) {
			t.Errorf("%s not written as it is", s)
		}
	}
}
