package jsondoc

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSeeds are real documents the API stores and sends, the tricky corners of the grammar,
// and the installation document cut at odd points.
func fuzzSeeds() []string {
	seeds := []string{
		installationDoc,
		`{"deviceType":"android","installationId":"dev-1","channels":["news","c3"],"appVersion":"1.2","badge":3,"timeZone":"Asia/Shanghai","createdAt":"2024-05-01T10:00:00.000Z","geo":{"__type":"GeoPoint","latitude":1.5,"longitude":-2}}`,
		`{"deviceType":"ios","deviceToken":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","badge":{"__op":"Increment","amount":1},"channels":{"__op":"AddUnique","objects":["vip"]},"appIdentifier":"com.example.app","apnsTopic":"com.example.app","lastActive":{"__type":"Date","iso":"2024-05-01T10:00:00.000Z"}}`,
		`{"where":{"deviceType":{"$in":["ios","android"]},"channels":"news","score":{"$gte":10.5}},"data":{"alert":"Breaking <news> & more","badge":"Increment","sound":"default","content-available":1,"title":"标题 😀"},"push_time":"2024-05-01T10:00:00Z","expiration_interval":86400,"prod":true}`,
		`{"aps":{"alert":{"title":"Hi","body":"line1\nline2\u2028end","loc-args":["a",null,3]},"badge":0,"sound":"default","mutable-content":1},"custom":{"k":"v","deep":[[[{}]]]}}`,
		`{"message":{"token":"fcm-token","data":{"payload":"{\"a\":1}"},"android":{"priority":"high","ttl":"3600s"}}}`,
		`{"results":[{"objectId":"abc","updatedAt":"2024-05-02T08:30:00.000Z"}],"count":1}`,
		``, ` `, `null`, ` null `, `true`, `false`, `0`, `-0`, `-0.0`, `1e400`, `-1e400`, `1e-400`, `5e-324`,
		`1.7976931348623157e308`, `123456789012345678901234567890`, `0.000001`, `1e-7`, `1e21`, `1E+2`,
		`01`, `-`, `1.`, `.5`, `+1`, `1e`, `1e+`, `NaN`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{}x`, `[] []`,
		`""`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u4e2D"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\ud83d\n"`, `"\u12"`, `"\'"`, "\"a\x01b\"",
		"\"a\xffb\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\u2028\u2029<>&\"", "{\"\xff\":1}",
		`{"a":1,"a":2}`, `{"a":{"x":1},"a":{"y":2}}`, `{"a":1,"\u0061":{"b":[]}}`, `[[],{},[{}],{"":""}]`,
		" \t\r\n[ 1 , \"x\" , { \"y\" : null } ] \t\r\n", "\f{}", "\ufeff{}",
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
		strings.Repeat(`{"a":`, 50) + "1" + strings.Repeat("}", 50),
	}
	for _, n := range []int{1, 7, 20, 33, 64, 100, 150, 200, len(installationDoc) - 1} {
		seeds = append(seeds, installationDoc[:n])
	}
	return seeds
}

// FuzzJSONDocDecode checks Decode and DecodeObject against json.Unmarshal on arbitrary bytes:
// the same decision to fail and, when both succeed, identical values.
func FuzzJSONDocDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeMatchesStdlib(t, data)
	})
}

// FuzzJSONDocMarshal checks AppendMarshal against json.Marshal: on whatever encoding/json
// decodes from the input, and on the input used as a raw string, a map key and a float64's bits.
func FuzzJSONDocMarshal(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	for _, x := range []float64{math.NaN(), math.Inf(-1), 1e21, 1e-7, math.Copysign(0, -1), 0.1} {
		f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(x)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if err := json.Unmarshal(data, &v); err == nil {
			checkMarshalMatchesStdlib(t, v)
			// The same value in a document beside values only json.Marshal encodes.
			checkMarshalMatchesStdlib(t, map[string]any{"v": v, "n": json.Number("7"), "r": json.RawMessage(data)})
		}
		checkMarshalMatchesStdlib(t, string(data))
		checkMarshalMatchesStdlib(t, map[string]any{string(data): []any{string(data), nil}})
		if len(data) >= 8 {
			checkMarshalMatchesStdlib(t, math.Float64frombits(binary.LittleEndian.Uint64(data)))
		}
	})
}

// FuzzJSONDocCheckStrict checks CheckStrict against oracles built from encoding/json and
// Decode: a text CheckStrict accepts is valid JSON and valid UTF-8, its decoded value nests
// at most 32 deep and has no forbidden key, and decoding it keeps every member written (no
// duplicate key collapsed). Number range is not CheckStrict's rule (Decode refuses 1e400).
func FuzzJSONDocCheckStrict(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"__proto__":1}`, `{"a":[{"constructor":1}]}`, `{"a":"\ud800"}`,
		`{"a":1,"\u0061":2}`, strings.Repeat(`{"a":`, 34) + "1" + strings.Repeat("}", 34)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckStrict(data, 32)
		if err == nil && !json.Valid(data) {
			t.Fatalf("CheckStrict accepted invalid JSON %q", data)
		}
		if err != nil {
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("CheckStrict accepted invalid UTF-8 %q", data)
		}
		v, derr := Decode(data)
		if derr != nil {
			return // a number out of float64 range
		}
		if !strictOracle(v, -1) {
			t.Fatalf("CheckStrict accepted %q, whose decoded value breaks a strict rule", data)
		}
		if n := countMembers(data); n != membersOf(v) {
			t.Fatalf("CheckStrict accepted %q: %d members written, %d decoded (a duplicate key)", data, n, membersOf(v))
		}
	})
}

// strictOracle checks the decoded value's depth and keys.
func strictOracle(v any, depth int) bool {
	if depth > 32 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "__proto__" || k == "constructor" || !strictOracle(e, depth+1) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !strictOracle(e, depth+1) {
				return false
			}
		}
	}
	return true
}

// countMembers counts the object members of a valid JSON text, with encoding/json's tokenizer.
func countMembers(data []byte) int {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	n := 0
	var stack []bool // true: inside an object, expecting a key
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, true)
			continue
		case json.Delim('['):
			stack = append(stack, false)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1] {
			if _, isKey := tok.(string); isKey {
				n++
				dec.More()
				// The value follows; skip it whole so its own members are counted by recursion.
				var raw json.RawMessage
				if dec.Decode(&raw) == nil {
					n += countMembers(raw)
				}
			}
		}
	}
}

func membersOf(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		n += len(x)
		for _, e := range x {
			n += membersOf(e)
		}
	case []any:
		for _, e := range x {
			n += membersOf(e)
		}
	}
	return n
}
