package jsondoc

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// identical is reflect.DeepEqual made stricter for decoded documents: float64 values must have
// the same bits, so -0 and 0 differ (encoding them gives "-0" and "0").
func identical(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && math.Float64bits(a) == math.Float64bits(b)
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || (a == nil) != (b == nil) || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !identical(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || (a == nil) != (b == nil) || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !identical(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// checkDecodeMatchesStdlib fails t unless Decode and DecodeObject agree with json.Unmarshal on
// in: same error-or-not, identical values.
func checkDecodeMatchesStdlib(t *testing.T, in []byte) {
	t.Helper()
	var want any
	wantErr := json.Unmarshal(in, &want)
	got, err := Decode(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Decode(%q): error %v, encoding/json error %v", in, err, wantErr)
	}
	if err == nil && !identical(got, want) {
		t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", in, got, want)
	}

	var wantM map[string]any
	wantErr = json.Unmarshal(in, &wantM)
	gotM, err := DecodeObject(in)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("DecodeObject(%q): error %v, encoding/json error %v", in, err, wantErr)
	}
	if err == nil && !identical(gotM, wantM) {
		t.Fatalf("DecodeObject(%q) = %#v, encoding/json gives %#v", in, gotM, wantM)
	}
}

func TestJSONDocDecode(t *testing.T) {
	const bad = "error"
	cases := []struct {
		name string
		in   string
		want any // bad: an error is expected
	}{
		// Whitespace and framing.
		{"empty input", "", bad},
		{"only space", " \t\r\n", bad},
		{"space around", " \t\r\n{} \t\r\n", map[string]any{}},
		{"form feed is not space", "\f{}", bad},
		{"vertical tab is not space", "{}\v", bad},
		{"nbsp is not space", "\u00a0{}", bad},
		{"BOM is not space", "\ufeff{}", bad},
		{"trailing garbage", `{}x`, bad},
		{"trailing second value", `{} {}`, bad},
		{"trailing comma", `[1,]`, bad},
		{"trailing comma object", `{"a":1,}`, bad},
		{"trailing NUL", "{}\x00", bad},
		{"unterminated object", `{"a":1`, bad},
		{"unterminated array", `[1,2`, bad},
		{"missing colon", `{"a" 1}`, bad},
		{"unquoted key", `{a:1}`, bad},
		{"single quotes", `{'a':1}`, bad},
		{"comment", `{} // x`, bad},

		// Literals.
		{"true", "true", true},
		{"false", "false", false},
		{"null", "null", nil},
		{"truncated literal", "tru", bad},
		{"capital literal", "True", bad},
		{"literal suffix", "nullx", bad},
		{"nested null", `{"a":null}`, map[string]any{"a": nil}},

		// Numbers.
		{"zero", "0", 0.0},
		{"negative zero", "-0", math.Copysign(0, -1)},
		{"negative zero fraction", "-0.0", math.Copysign(0, -1)},
		{"integer", "123", 123.0},
		{"15 digits", "999999999999999", 999999999999999.0},
		{"16 digits", "9999999999999999", 1e16},
		{"2^53+1", "9007199254740993", 9007199254740992.0},
		{"fraction", "-1.5", -1.5},
		{"exponent", "1E+2", 100.0},
		{"exponent leading zeros", "1e007", 1e7},
		{"huge exponent", "1e400", bad},
		{"huge negative exponent", "-1e400", bad},
		{"huge exponent in object", `{"a":1e400}`, bad},
		{"tiny exponent underflows to zero", "1e-400", 0.0},
		{"max float", "1.7976931348623157e308", math.MaxFloat64},
		{"smallest denormal", "5e-324", 5e-324},
		{"long mantissa", "0." + strings.Repeat("1", 400), 0.1111111111111111},
		{"leading zero", "01", bad},
		{"leading plus", "+1", bad},
		{"bare minus", "-", bad},
		{"minus space", "- 1", bad},
		{"dot without digits", "1.", bad},
		{"leading dot", ".5", bad},
		{"exponent without digits", "1e", bad},
		{"exponent sign only", "1e+", bad},
		{"hex", "0x10", bad},
		{"underscore", "1_000", bad},
		{"NaN", "NaN", bad},
		{"Infinity", "Infinity", bad},

		// Strings.
		{"empty string", `""`, ""},
		{"plain", `"hello"`, "hello"},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"single quote escape", `"\'"`, bad},
		{"unknown escape", `"\x41"`, bad},
		{"unicode escape", `"\u00e9\u4e2D"`, "é中"},
		{"escaped NUL", `"\u0000"`, "\x00"},
		{"short unicode escape", `"\u12"`, bad},
		{"bad hex", `"\u12g4"`, bad},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"lone high surrogate", `"\ud83d"`, "\ufffd"},
		{"lone high surrogate then text", `"\ud83dx"`, "\ufffdx"},
		{"lone low surrogate", `"\ude00"`, "\ufffd"},
		{"reversed pair", `"\ude00\ud83d"`, "\ufffd\ufffd"},
		{"high then non-surrogate escape", `"\ud83d\u0041"`, "\ufffdA"},
		{"high then high then low", `"\ud83d\ud83d\ude00"`, "\ufffd😀"},
		{"high then short escape", `"\ud83d\n"`, "\ufffd\n"},
		{"high then bad escape", `"\ud83d\u12"`, bad},
		{"raw control byte", "\"a\x01b\"", bad},
		{"raw newline", "\"a\nb\"", bad},
		{"raw tab", "\"a\tb\"", bad},
		{"raw DEL is fine", "\"a\x7fb\"", "a\x7fb"},
		{"valid UTF-8", `"héllo 中 😀"`, "héllo 中 😀"},
		{"invalid UTF-8 byte", "\"a\xffb\"", "a\ufffdb"},
		{"truncated UTF-8", "\"a\xe4\xb8\"", "a\ufffd\ufffd"},
		{"encoded surrogate", "\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
		{"overlong", "\"\xc0\xaf\"", "\ufffd\ufffd"},
		{"invalid UTF-8 with escape", "\"\xff\\n\"", "\ufffd\n"},
		{"U+2028 raw", "\"\u2028\"", "\u2028"},
		{"unterminated string", `"abc`, bad},
		{"unterminated escape", `"abc\`, bad},
		{"invalid UTF-8 key", "{\"\xff\":1}", map[string]any{"\ufffd": 1.0}},

		// Structure.
		{"empty array", `[]`, []any{}},
		{"empty object", `{}`, map[string]any{}},
		{"nested", `{"a":[1,"x",{"b":false}],"c":{}}`, map[string]any{
			"a": []any{1.0, "x", map[string]any{"b": false}}, "c": map[string]any{}}},
		{"duplicate key last wins", `{"a":1,"a":2}`, map[string]any{"a": 2.0}},
		{"duplicate key not merged", `{"a":{"x":1},"a":{"y":2}}`, map[string]any{"a": map[string]any{"y": 2.0}}},
		{"duplicate key via escape", `{"a":1,"\u0061":2}`, map[string]any{"a": 2.0}},
		{"duplicate key type change", `{"a":[1],"a":null}`, map[string]any{"a": nil}},
		{"nesting at the limit", strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), nestedArrays(maxDepth)},
		{"nesting past the limit", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), bad},
		{"mixed nesting past the limit", strings.Repeat(`{"a":[`, maxDepth/2) + "{}" + strings.Repeat("]}", maxDepth/2), bad},
		{"unclosed nesting past the limit", strings.Repeat("[", maxDepth+1), bad},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if tc.want == bad {
				if err == nil {
					t.Fatalf("Decode(%.60q) = %#v, want an error", tc.in, got)
				}
				if !strings.HasPrefix(err.Error(), "cannot decode JSON") {
					t.Errorf("error %q does not say what failed", err)
				}
			} else if err != nil {
				t.Fatalf("Decode(%.60q): %v", tc.in, err)
			} else if !identical(got, tc.want) {
				t.Fatalf("Decode(%.60q) = %#v, want %#v", tc.in, got, tc.want)
			}
			checkDecodeMatchesStdlib(t, []byte(tc.in))
		})
	}
}

func nestedArrays(n int) any {
	var v any = []any{}
	for i := 1; i < n; i++ {
		v = []any{v}
	}
	return v
}

func TestJSONDocDecodeObject(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    map[string]any
		wantErr bool
	}{
		{"object", `{"a":1}`, map[string]any{"a": 1.0}, false},
		{"empty object is not nil", `{}`, map[string]any{}, false},
		{"null is a nil map", `null`, nil, false},
		{"null with space", " null\n", nil, false},
		{"array", `[{"a":1}]`, nil, true},
		{"empty array", `[]`, nil, true},
		{"string", `"{}"`, nil, true},
		{"number", `1`, nil, true},
		{"true", `true`, nil, true},
		{"false", `false`, nil, true},
		{"empty", ``, nil, true},
		{"out of range inside", `{"a":[1e999]}`, nil, true},
		{"trailing garbage", `{"a":1}}`, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeObject([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("DecodeObject(%q) = %#v, want an error", tc.in, got)
				}
			} else if err != nil {
				t.Fatalf("DecodeObject(%q): %v", tc.in, err)
			} else if !identical(got, tc.want) {
				t.Fatalf("DecodeObject(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			checkDecodeMatchesStdlib(t, []byte(tc.in))
		})
	}
}

func TestJSONDocDecodeErrorOffset(t *testing.T) {
	_, err := Decode([]byte(`{"a":1,"b":tru}`))
	if err == nil || !strings.Contains(err.Error(), "at offset 14") {
		t.Fatalf("error %v, want one at offset 14", err)
	}
	_, err = Decode([]byte("\"\x01\""))
	if err == nil || !strings.Contains(err.Error(), "0x01") {
		t.Fatalf("error %v, want the control byte named as 0x01", err)
	}
}

// TestJSONDocDecodeAllBytes puts every byte value inside a string, alone and after a
// backslash, and compares with encoding/json.
func TestJSONDocDecodeAllBytes(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, in := range []string{
			fmt.Sprintf("\"a%cb\"", c),
			fmt.Sprintf("\"\\%c\"", c),
			fmt.Sprintf("%c", c),
			fmt.Sprintf("[1%c2]", c),
			fmt.Sprintf("\"\\u00%c0\"", c),
		} {
			checkDecodeMatchesStdlib(t, []byte(in))
		}
	}
}

// TestJSONDocDecodeDoesNotAliasInput checks the decoded strings are copies.
func TestJSONDocDecodeDoesNotAliasInput(t *testing.T) {
	in := []byte(`{"key":"value","k\u00e9":"v\u00e9"}`)
	m, err := DecodeObject(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 'x'
	}
	want := map[string]any{"key": "value", "ké": "vé"}
	if !identical(m, want) {
		t.Fatalf("after overwriting the input: %#v, want %#v", m, want)
	}
}
