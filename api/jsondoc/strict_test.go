package jsondoc

import (
	"errors"
	"strings"
	"testing"
)

// nest wraps v in n objects {"a": ...}.
func nest(n int, v string) string {
	return strings.Repeat(`{"a":`, n) + v + strings.Repeat("}", n)
}

func TestJSONDocCheckStrict(t *testing.T) {
	const depth = 32
	for _, tc := range []struct {
		name, in string
		reason   string // "" when accepted; else a part of the refusal
	}{
		{"plain object", `{"a":1,"b":[1,"x",{"c":null}],"d":{"e":true}}`, ""},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":1}]}`, ""},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, ""},
		{"raw non-ASCII", `{"标题":"😀 é"}`, ""},
		{"escaped key differing only in escapes", `{"a":1,"\u0062":2}`, ""},
		{"many distinct keys", `{` + manyKeys(40, "") + `}`, ""},
		{"keys that only differ in case", `{"Data":1,"data":2}`, ""},
		{"proto-like but different keys", `{"__proto":1,"Constructor":2,"prototype":3}`, ""},
		{"depth at the limit", nest(depth+1, "1"), ""},
		{"empty container at the limit", nest(depth+1, "{}"), ""},

		{"duplicate key", `{"a":1,"a":2}`, `duplicate key "a"`},
		{"duplicate key by escape", `{"a":1,"\u0061":2}`, `duplicate key "a"`},
		{"duplicate key nested in an array", `{"x":[{"k":1,"k":1}]}`, `duplicate key "k"`},
		{"duplicate key among many", `{` + manyKeys(40, "") + `,"k7":0}`, `duplicate key "k7"`},
		{"duplicate key deep", nest(20, `{"b":1,"b":2}`), `duplicate key "b"`},
		{"invalid UTF-8 in a value", "{\"a\":\"x\xffy\"}", "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"\xc0\xaf\":1}", "invalid UTF-8"},
		{"encoded surrogate bytes", "{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8"},
		{"lone high surrogate", `{"a":"\ud83d"}`, "lone surrogate"},
		{"lone high surrogate before a letter", `{"a":"\ud83dA"}`, "lone surrogate"},
		{"high surrogate then a non-low escape", `{"a":"\ud83d\u0041"}`, "lone surrogate"},
		{"lone low surrogate", `{"a":"\ude00"}`, "lone surrogate"},
		{"reversed pair", `{"a":"\ude00\ud83d"}`, "lone surrogate"},
		{"lone surrogate in a key", `{"\ud800":1}`, "lone surrogate"},
		{"one level too deep", nest(depth+2, "1"), "nested deeper than 32"},
		{"too deep in arrays", `{"a":` + strings.Repeat("[", depth+2) + strings.Repeat("]", depth+2) + `}`, "nested deeper than 32"},
		{"__proto__ at the top", `{"__proto__":{"admin":true}}`, `key "__proto__"`},
		{"constructor nested", `{"data":{"x":[{"constructor":{"prototype":{}}}]}}`, `key "constructor"`},
		{"__proto__ escaped", `{"\u005f_proto__":1}`, `key "__proto__"`},
		{"syntax error", `{"a":}`, "invalid character"},
		{"truncated", `{"a":"x`, "unexpected end"},
		{"trailing garbage", `{} x`, "after top-level value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckStrict([]byte(tc.in), depth)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("CheckStrict(%.80q) = %v, want nil", tc.in, err)
				}
				return
			}
			var se *StrictError
			if !errors.As(err, &se) || !strings.Contains(se.Error(), tc.reason) {
				t.Fatalf("CheckStrict(%.80q) = %v, want a *StrictError containing %q", tc.in, err, tc.reason)
			}
		})
	}
}

func manyKeys(n int, extra string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + itoa(i) + `":0`)
	}
	b.WriteString(extra)
	return b.String()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}
