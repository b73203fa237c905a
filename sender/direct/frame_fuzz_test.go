package direct

import (
	"encoding/json"
	"testing"

	"github.com/pushd/pushd/push"
)

// FuzzDirectDecodeFrame: any bytes a device sends decode to a valid frame or an error, never
// a panic; an accepted ack has 1..1000 non-empty ids.
func FuzzDirectDecodeFrame(f *testing.F) {
	for _, s := range []string{
		`{"op":"ping"}`, `{"op":"pong"}`, `{"op":"ack","ids":["a","b"]}`, `{"op":"ack","ids":[]}`,
		`{"op":"ack","ids":[""]}`, `{"op":"ack","ids":"x"}`, `{"op":"push"}`, `{"op":1}`, `[]`, `null`,
		`{"op":"ack","ids":["a"],"extra":{"deep":[1,2,3]}}`, `{"op":"pi`, "\xff\xfe", ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := DecodeFrame(b)
		if err != nil {
			return
		}
		switch fr.Op {
		case OpPing, OpPong:
		case OpAck:
			if len(fr.IDs) == 0 || len(fr.IDs) > maxAckIDs {
				t.Fatalf("accepted ack with %d ids", len(fr.IDs))
			}
			for _, id := range fr.IDs {
				if id == "" {
					t.Fatal("accepted an empty id")
				}
			}
		default:
			t.Fatalf("accepted op %q", fr.Op)
		}
	})
}

// FuzzDirectPushFrame: a push frame is valid JSON with the message's fields, whatever the ids.
func FuzzDirectPushFrame(f *testing.F) {
	f.Add("id1", "nid1", int64(0))
	f.Add("a\"b\\c\u2028<>&", "\x00\x1f", int64(1700000000000))
	f.Fuzz(func(t *testing.T, id, nid string, exp int64) {
		m := push.DirectMessage{ID: id, NotificationID: nid, Data: json.RawMessage(`{"alert":"x"}`), Expires: exp}
		var got struct {
			Op   string          `json:"op"`
			ID   string          `json:"id"`
			NID  string          `json:"nid"`
			Data json.RawMessage `json:"data"`
			Exp  int64           `json:"exp"`
		}
		b := AppendPush(nil, &m)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("push frame %q is not JSON: %v", b, err)
		}
		if !json.Valid([]byte(`"`+id+`"`)) && got.ID == id {
			return // invalid UTF-8 is replaced, as encoding/json does
		}
		if got.Op != OpPush || string(got.Data) != `{"alert":"x"}` || got.Exp != exp {
			t.Fatalf("push frame %s decodes to %+v", b, got)
		}
	})
}
