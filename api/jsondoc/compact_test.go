package jsondoc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkCompact holds CompactValueEnd to json.Valid and Members to json.Unmarshal into a
// map[string]json.RawMessage, on the inputs they accept.
func checkCompact(t *testing.T, b []byte) (walked, split bool) {
	t.Helper()
	if end, ok := CompactValueEnd(b, 0); ok && end == len(b) {
		walked = true
		if !json.Valid(b) {
			t.Fatalf("CompactValueEnd took %q, which json.Valid refuses", b)
		}
	}
	m, ok := Members(b)
	if !ok {
		return walked, false
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("Members took %q, which json.Unmarshal refuses: %v", b, err)
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Members(%q) = %q, json.Unmarshal %q", b, m, want)
	}
	if len(b) > 0 {
		saved := b[0]
		b[0] = 'X' // the values are copies
		for k, v := range m {
			if !reflect.DeepEqual(v, want[k]) {
				t.Fatalf("Members(%q)[%q] aliases its input", b, k)
			}
		}
		b[0] = saved
	}
	return walked, true
}

func TestCompactMembers(t *testing.T) {
	for _, c := range []struct {
		in            string
		walked, split bool
	}{
		{`{}`, true, true},
		{`{"data":{"alert":"hi","n":[1,-2.5e3,true,false,null]},"where":{"a":"\u00e9\"x"},"prod":"dev"}`, true, true},
		{`{"a":1,"a":{"b":2}}`, true, true},
		{`{"a":null}`, true, true},
		{`{"中文":"值"}`, true, true},
		{`{ "a":1}`, false, false},
		{`{"a":1} `, false, false},
		{`{"\u0061":1}`, true, false},
		{"{\"\xff\":1}", true, false},
		{`{"a":01}`, false, false},
		{`{"a":1,}`, false, false},
		{`{"a":"\x"}`, false, false},
		{`{"a":1}x`, false, false},
		{`[1,2]`, true, false},
		{`{"a":[` + strings.Repeat("[", 120) + strings.Repeat("]", 120) + `]}`, false, false},
	} {
		walked, split := checkCompact(t, []byte(c.in))
		if walked != c.walked || split != c.split {
			t.Errorf("%q: walked %v split %v, want %v %v", c.in, walked, split, c.walked, c.split)
		}
	}
}

func FuzzCompactMembers(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkCompact(t, b) })
}
