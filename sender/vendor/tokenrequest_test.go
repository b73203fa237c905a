package vendor

import "testing"

// TestAppendTokenRequest: the tokens go first, then the message's members, inside the
// vendor's envelope; an empty message adds no stray comma.
func TestAppendTokenRequest(t *testing.T) {
	type msg struct {
		Data string `json:"data,omitempty"`
		TTL  string `json:"ttl,omitempty"`
	}
	for _, c := range []struct {
		head, tail string
		m          msg
		want       string
	}{
		{`{"validate_only":false,"message":{"token":`, `}}`, msg{Data: `{"a":1}`, TTL: "60s"},
			`{"validate_only":false,"message":{"token":["t1","t2"],"data":"{\"a\":1}","ttl":"60s"}}`},
		{`{"token":`, `}`, msg{}, `{"token":["t1","t2"]}`},
	} {
		got, err := AppendTokenRequest([]byte("x"), c.head, []string{"t1", "t2"}, &c.m, c.tail)
		if err != nil || string(got) != "x"+c.want {
			t.Errorf("%s…%s: %s, %v; want x%s", c.head, c.tail, got, err, c.want)
		}
	}
	if d, err := CompactJSON([]byte("{ \"a\" : [1, 2] }")); err != nil || d != `{"a":[1,2]}` {
		t.Errorf("CompactJSON: %q, %v", d, err)
	}
	if _, err := CompactJSON([]byte("{")); err == nil {
		t.Error("CompactJSON accepted a broken object")
	}
}
