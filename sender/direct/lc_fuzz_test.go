package direct

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct/lcproto"
)

// FuzzDirectDecodeLC: any bytes a device sends in the original's protocol decode to a command
// with a cmd or to an error, never a panic; an accepted ack has at most 1000 ids, and an
// accepted command marshals again.
func FuzzDirectDecodeLC(f *testing.F) {
	login, _ := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_login.Enum(), AppId: proto.String("app"), InstallationId: proto.String("iid"),
		LoginMessage: &lcproto.LoginCommand{SystemInfo: []byte{0x08, 0x01}}})
	ack, _ := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_ack.Enum(), InstallationId: proto.String("iid"), AckMessage: &lcproto.AckCommand{Ids: []string{"a", "b"}}})
	data := AppendLCData(nil, &push.DirectMessage{ID: "m1", Data: []byte(`{"alert":"hi"}`)}, true)
	for _, b := range [][]byte{login, ack, data, {}, {0x08}, {0x08, 0x63}, {0xff, 0xff}, {0x1a, 0x01, 'x'}, login[:len(login)/2], ack[:len(ack)-1]} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeLC(b)
		if err != nil {
			return
		}
		if c.Cmd == nil {
			t.Fatal("accepted a command without cmd")
		}
		if n := len(c.GetAckMessage().GetIds()); c.GetCmd() == lcproto.CommandType_ack && n > maxAckIDs {
			t.Fatalf("accepted an ack of %d ids", n)
		}
		if _, err := proto.Marshal(c); err != nil {
			// proto2 required fields of a nested message may be missing: not an error of ours,
			// and the gateway never marshals what it decoded.
			if _, err := (proto.MarshalOptions{AllowPartial: true}).Marshal(c); err != nil {
				t.Fatalf("cannot marshal an accepted command: %v", err)
			}
		}
	})
}
