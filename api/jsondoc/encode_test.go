package jsondoc

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// checkMarshalMatchesStdlib fails t unless AppendMarshal and json.Marshal agree on v: same
// error-or-not and, without error, the same bytes. It returns AppendMarshal's output.
func checkMarshalMatchesStdlib(t *testing.T, v any) string {
	t.Helper()
	want, wantErr := json.Marshal(v)
	prefix := []byte("prefix")
	got, err := AppendMarshal(prefix, v)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendMarshal(%#v): error %v, json.Marshal error %v", v, err, wantErr)
	}
	if err != nil {
		if string(got) != "prefix" {
			t.Fatalf("AppendMarshal after an error returned %q, want the prefix unchanged", got)
		}
		return ""
	}
	if !strings.HasPrefix(string(got), "prefix") || string(got[len(prefix):]) != string(want) {
		t.Fatalf("AppendMarshal(%#v) = %q, json.Marshal gives %q", v, got, "prefix"+string(want))
	}
	return string(got[len(prefix):])
}

type marshalerFunc func() ([]byte, error)

func (f marshalerFunc) MarshalJSON() ([]byte, error) { return f() }

func TestJSONDocMarshal(t *testing.T) {
	const bad = "\x00error"
	cyclic := map[string]any{"a": 1.0}
	cyclic["self"] = cyclic
	cyclicSlice := []any{1.0, nil}
	cyclicSlice[1] = cyclicSlice
	var deep any = map[string]any{}
	for range 3000 {
		deep = []any{map[string]any{"k": deep}}
	}
	cases := []struct {
		name string
		v    any
		want string // bad: an error is expected
	}{
		// Scalars.
		{"nil", nil, `null`},
		{"true", true, `true`},
		{"false", false, `false`},
		{"zero", 0.0, `0`},
		{"negative zero", math.Copysign(0, -1), `-0`},
		{"integer", 42.0, `42`},
		{"negative integer", -7.0, `-7`},
		{"fraction", 1.5, `1.5`},
		{"below 1e15", 999999999999999.0, `999999999999999`},
		{"1e15", 1e15, `1000000000000000`},
		{"2^53", 9007199254740992.0, `9007199254740992`},
		{"1e20 stays f", 1e20, `100000000000000000000`},
		{"1e21 switches to e", 1e21, `1e+21`},
		{"just below 1e21", 999999999999999900000.0, `999999999999999900000`},
		{"1e-6 stays f", 1e-6, `0.000001`},
		{"below 1e-6 switches to e", 1e-7, `1e-7`},
		{"negative small", -1.5e-7, `-1.5e-7`},
		{"exponent cleanup keeps two digits", 1e-10, `1e-10`},
		{"large exponent", 1e300, `1e+300`},
		{"max float", math.MaxFloat64, `1.7976931348623157e+308`},
		{"smallest denormal", 5e-324, `5e-324`},
		{"shortest repr", 0.1, `0.1`},
		{"third", 1.0 / 3, `0.3333333333333333`},
		{"NaN", math.NaN(), bad},
		{"+Inf", math.Inf(1), bad},
		{"-Inf", math.Inf(-1), bad},
		{"NaN nested", map[string]any{"a": []any{math.NaN()}}, bad},

		// Strings.
		{"empty string", "", `""`},
		{"plain", "hello", `"hello"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other control bytes", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"DEL is raw", "\x7f", "\"\x7f\""},
		{"slash is raw", "a/b", `"a/b"`},
		{"HTML", "<a href='x'>&</a>", `"\u003ca href='x'\u003e\u0026\u003c/a\u003e"`},
		{"line and paragraph separators", "a\u2028b\u2029c", `"a\u2028b\u2029c"`},
		{"non-ASCII raw", "héllo 中 😀", `"héllo 中 😀"`},
		{"invalid UTF-8", "a\xffb\xe4\xb8", `"a\ufffdb\ufffd\ufffd"`},
		{"encoded surrogate", "\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
		{"U+FFFD raw", "\ufffd", "\"\ufffd\""},

		// Containers.
		{"nil map", map[string]any(nil), `null`},
		{"nil slice", []any(nil), `null`},
		{"empty map", map[string]any{}, `{}`},
		{"empty slice", []any{}, `[]`},
		{"sorted keys", map[string]any{"b": 1.0, "a": 2.0, "B": 3.0, "": 4.0, "é": 5.0, "aa": 6.0},
			`{"":4,"B":3,"a":2,"aa":6,"b":1,"é":5}`},
		{"keys escaped", map[string]any{"<k>": "v", "a\nb": nil, "\xff": true},
			`{"\u003ck\u003e":"v","a\nb":null,"\ufffd":true}`},
		{"nested nils", map[string]any{"m": map[string]any(nil), "s": []any(nil), "n": nil},
			`{"m":null,"n":null,"s":null}`},
		{"nested", []any{map[string]any{"x": []any{1.0, "two", false}}, []any{}},
			`[{"x":[1,"two",false]},[]]`},
		{"cyclic map", cyclic, bad},
		{"cyclic slice", cyclicSlice, bad},
		{"deep but finite", deep, strings.Repeat(`[{"k":`, 3000) + `{}` + strings.Repeat(`}]`, 3000)},

		// Other types go through json.Marshal.
		{"int", 7, `7`},
		{"int64", int64(-1) << 60, `-1152921504606846976`},
		{"uint8", uint8(200), `200`},
		{"float32", float32(0.1), `0.1`},
		{"json.Number", json.Number("1e400"), `1e400`},
		{"bad json.Number", json.Number("x"), bad},
		{"RawMessage compacted", json.RawMessage(" { \"a\" : [ 1 , 2 ] } "), `{"a":[1,2]}`},
		{"RawMessage HTML escaped", json.RawMessage(`"<&>"`), `"\u003c\u0026\u003e"`},
		{"invalid RawMessage", json.RawMessage(`{`), bad},
		{"Marshaler", marshalerFunc(func() ([]byte, error) { return []byte(` [ "<" ] `), nil }), `["\u003c"]`},
		{"map[string]string", map[string]string{"b": "<", "a": "x"}, `{"a":"x","b":"\u003c"}`},
		{"map[string]int", map[string]int{"z": 1}, `{"z":1}`},
		{"[]string", []string{"a"}, `["a"]`},
		{"[]byte", []byte("hi"), `"aGk="`},
		{"struct", struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
		}{A: "&"}, `{"a":"\u0026"}`},
		{"time", time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC), `"2024-05-01T10:00:00Z"`},
		{"pointer", new(float64), `0`},
		{"channel", make(chan int), bad},
		{"func", func() {}, bad},
		{"mixed", map[string]any{"n": 3, "f": 3.0, "raw": json.RawMessage(`[ ]`), "s": []string(nil)},
			`{"f":3,"n":3,"raw":[],"s":null}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkMarshalMatchesStdlib(t, tc.v)
			if tc.want == bad {
				if _, err := AppendMarshal(nil, tc.v); err == nil || !strings.HasPrefix(err.Error(), "cannot encode JSON") {
					t.Fatalf("AppendMarshal error %v, want a \"cannot encode JSON\" error", err)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("AppendMarshal = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestJSONDocMarshalAllBytesAndRunes encodes every byte alone and a run of interesting runes,
// comparing with json.Marshal.
func TestJSONDocMarshalAllBytesAndRunes(t *testing.T) {
	for c := 0; c < 256; c++ {
		checkMarshalMatchesStdlib(t, "x"+string([]byte{byte(c)})+"y")
		checkMarshalMatchesStdlib(t, map[string]any{string([]byte{byte(c)}): float64(c)})
	}
	for r := rune(0x80); r < 0x3000; r++ {
		checkMarshalMatchesStdlib(t, string(r))
	}
	for _, r := range []rune{0xfeff, 0xfffd, 0xfffe, 0xffff, 0x10000, 0x1f600, 0x10ffff} {
		checkMarshalMatchesStdlib(t, string(r))
	}
}

// TestJSONDocMarshalFloats compares float formatting on powers of ten, their neighbours and
// the f/e switch points.
func TestJSONDocMarshalFloats(t *testing.T) {
	for exp := -325; exp <= 309; exp++ {
		f := math.Pow(10, float64(exp))
		for _, x := range []float64{f, -f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), 1.5 * f, 123456789 * f} {
			checkMarshalMatchesStdlib(t, x)
		}
	}
	for _, x := range []float64{1<<53 - 1, 1 << 53, 1<<53 + 2, 1<<63 - 1024, 1 << 63, 1e15 - 1, 1e15 + 1, 0.5, 1e15 - 0.5} {
		checkMarshalMatchesStdlib(t, x)
		checkMarshalMatchesStdlib(t, -x)
	}
}

func TestJSONDocRoundTrip(t *testing.T) {
	in := []byte(installationDoc)
	m, err := DecodeObject(in)
	if err != nil {
		t.Fatal(err)
	}
	out := checkMarshalMatchesStdlib(t, m)
	m2, err := DecodeObject([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if !identical(m, m2) {
		t.Fatalf("round trip changed the document: %#v, then %#v", m, m2)
	}
}
