package direct_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"google.golang.org/protobuf/proto"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/sender/direct/lcproto"
)

// lcURL is where the rig serves the original's protocol (the router's "/").
func (r *rig) lcURL() string { return strings.TrimSuffix(r.url, "/1.1/connect") + "/" }

func (r *rig) dialLC(t *testing.T, cfg sim.LCDeviceConfig) (*sim.LCDevice, error) {
	t.Helper()
	if cfg.AppID == "" {
		cfg.AppID = testApp
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := sim.DialLCDeviceAt(ctx, r.lcURL(), cfg)
	if err == nil {
		t.Cleanup(d.Close)
	}
	return d, err
}

func (r *rig) mustDialLC(t *testing.T, cfg sim.LCDeviceConfig) *sim.LCDevice {
	t.Helper()
	d, err := r.dialLC(t, cfg)
	if err != nil {
		t.Fatalf("dial %s (original's protocol): %v", cfg.InstallationID, err)
	}
	return d
}

func lcDevice(iid string) sim.LCDeviceConfig {
	return sim.LCDeviceConfig{DeviceConfig: sim.DeviceConfig{InstallationID: iid}}
}

// TestDirectLCDeliveryAckAndOffline: a device of the original's protocol logs in, gets a
// message as a data command, acks it (one arrival, cache emptied), and after a reconnect on
// the other sub-protocol gets the message cached while it was away, marked offline.
func TestDirectLCDeliveryAckAndOffline(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "lc1", push.DeviceAndroid, "")
	r.record(t, "m1")
	r.record(t, "m2")
	ledger := sim.NewLedger()
	cfg := lcDevice("lc1")
	cfg.Ledger = ledger
	d := r.mustDialLC(t, cfg)
	r.consume(t, "lc1", "m1", time.Time{})
	waitfor.True(t, 10*time.Second, "m1 acked and counted", func() bool { return ledger.Acked("m1") && r.tally(t, "m1").Arrivals == 1 })
	if got := string(ledger.Data("m1")); got != `{"_nid":"nidm1","alert":"m1"}` {
		t.Errorf("data %s", got)
	}
	if d.Offline("m1") {
		t.Error("a live message came marked offline")
	}
	if tl := r.tally(t, "m1"); !tl.Equal(push.Tally{Sent: 1, Arrivals: 1}) {
		t.Errorf("tally %+v, want sent 1 arrivals 1", tl)
	}
	d.Close()
	waitfor.True(t, 10*time.Second, "the session detached", func() bool { return r.core.Connected() == 0 })
	r.consume(t, "lc1", "m2", time.Time{})
	if c := r.cached(t, "lc1"); len(c) != 1 || c[0] != "m2" {
		t.Fatalf("cached %v, want [m2]", c)
	}
	cfg.SubProtocol = direct.SubProtocolLC23
	d = r.mustDialLC(t, cfg)
	waitfor.True(t, 10*time.Second, "m2 flushed and acked", func() bool { return ledger.Acked("m2") && r.tally(t, "m2").Arrivals == 1 })
	if !d.Offline("m2") {
		t.Error("the flushed message is not marked offline")
	}
	if ledger.Times("m1") != 1 || ledger.Times("m2") != 1 {
		t.Errorf("received m1 %d, m2 %d times; want once each", ledger.Times("m1"), ledger.Times("m2"))
	}
	if c := r.cached(t, "lc1"); len(c) != 0 {
		t.Errorf("still cached: %v", c)
	}
}

// rawLC is a bare client of the original's protocol, for frames no SDK sends.
type rawLC struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialRawLC(t *testing.T, url string) *rawLC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, br, _, err := ws.Dialer{Protocols: []string{direct.SubProtocolLC21}}.Dial(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if br == nil {
		br = bufio.NewReader(conn)
	}
	return &rawLC{conn: conn, r: br}
}

func (c *rawLC) send(t *testing.T, op ws.OpCode, b []byte) {
	t.Helper()
	if err := ws.WriteFrame(c.conn, ws.MaskFrame(ws.NewFrame(op, true, b))); err != nil {
		t.Fatal(err)
	}
}

// untilClose reads the server's frames until its close frame: the commands before it and the
// close code and reason.
func (c *rawLC) untilClose(t *testing.T) ([]*lcproto.GenericCommand, int, string) {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var cmds []*lcproto.GenericCommand
	for {
		h, err := ws.ReadHeader(c.r)
		if err != nil {
			t.Fatalf("no close frame: %v", err)
		}
		b := make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, b); err != nil {
			t.Fatal(err)
		}
		switch h.OpCode {
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(b)
			return cmds, int(code), reason
		case ws.OpBinary:
			var g lcproto.GenericCommand
			if err := proto.Unmarshal(b, &g); err != nil {
				t.Fatalf("server sent a frame that is not a GenericCommand: %v", err)
			}
			cmds = append(cmds, &g)
		}
	}
}

// TestDirectLCRefusals: a login that cannot be served is answered with an error command and a
// close of the same code; frames that are not the protocol's close with 4002; nothing is
// attached.
func TestDirectLCRefusals(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "ios1", push.DeviceIOS, "")
	r.installation(t, "hms1", push.DeviceAndroid, "hms")
	r.installation(t, "lc1", push.DeviceAndroid, "")
	ack := sim.AckCommand("lc1", []string{"m1"})
	for _, tc := range []struct {
		name  string
		op    ws.OpCode
		frame []byte
		code  int
	}{
		{"unknown app", ws.OpBinary, sim.LoginCommand("nosuchapp", "lc1"), direct.CloseUnauthorized},
		{"unknown installation", ws.OpBinary, sim.LoginCommand(testApp, "nobody"), direct.CloseNotFound},
		{"iOS installation", ws.OpBinary, sim.LoginCommand(testApp, "ios1"), direct.CloseNotDirect},
		{"vendor installation", ws.OpBinary, sim.LoginCommand(testApp, "hms1"), direct.CloseNotDirect},
		{"no installation id", ws.OpBinary, sim.LoginCommand(testApp, ""), direct.CloseBadRequest},
		{"ack before login", ws.OpBinary, ack, direct.CloseBadFrame},
		{"not protobuf", ws.OpBinary, []byte{0xff, 0xff, 0xff}, direct.CloseBadFrame},
		{"no cmd", ws.OpBinary, []byte{0x1a, 0x01, 'x'}, direct.CloseBadFrame},
		{"text frame", ws.OpText, []byte(`{"cmd":"login"}`), direct.CloseBadFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRawLC(t, r.lcURL())
			c.send(t, tc.op, tc.frame)
			cmds, code, reason := c.untilClose(t)
			if code != tc.code {
				t.Fatalf("closed with %d %q, want %d", code, reason, tc.code)
			}
			if len(cmds) != 1 || cmds[0].GetCmd() != lcproto.CommandType_error || cmds[0].GetErrorMessage().GetCode() != int32(tc.code) {
				t.Errorf("commands before the close: %v, want one error command of code %d", cmds, tc.code)
			}
		})
	}
	if n := r.core.Connected(); n != 0 {
		t.Errorf("%d sessions attached", n)
	}
	// A connection offering neither sub-protocol is ours, and only on /1.1/connect.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, _, err := ws.Dialer{}.Dial(ctx, r.lcURL())
	var se ws.StatusError
	if !errors.As(err, &se) || int(se) != 404 {
		t.Errorf("dial / without a sub-protocol: %v, want 404", err)
	}
}

// TestDirectLCOtherCommandsKeepTheConnection: an IM command (which the SDK multiplexes on the
// same socket) is answered with an error echoing its request id, and pushes keep arriving.
func TestDirectLCOtherCommandsKeepTheConnection(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "lc1", push.DeviceAndroid, "")
	r.record(t, "m1")
	d := r.mustDialLC(t, lcDevice("lc1"))
	session, _ := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_session.Enum(), Op: proto.Int32(1), PeerId: proto.String("alice"), I: proto.Int32(7)})
	if err := d.Send(session); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, 10*time.Second, "the error answer", func() bool { return len(d.Errors()) == 1 })
	if e := d.Errors()[0]; e.I != 7 || e.Code != direct.LCErrUnsupported {
		t.Errorf("error %+v, want i 7 code %d", e, direct.LCErrUnsupported)
	}
	r.consume(t, "lc1", "m1", time.Time{})
	waitfor.True(t, 10*time.Second, "m1 acked and counted", func() bool { return r.tally(t, "m1").Arrivals == 1 })
}

// TestDirectLCOneConnectionAcrossProtocols: an installation has one live connection whichever
// protocol it speaks: a login in the original's protocol replaces our connection, and ours
// replaces it in turn (error command and close 4009).
func TestDirectLCOneConnectionAcrossProtocols(t *testing.T) {
	r := newRig(t, direct.Config{})
	r.installation(t, "dev1", push.DeviceAndroid, "")
	r.record(t, "m1")
	ours, _ := r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	lc := r.mustDialLC(t, lcDevice("dev1"))
	select {
	case <-ours.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("our connection was not replaced")
	}
	if code, _ := ours.CloseCode(); code != direct.CloseReplaced {
		t.Errorf("ours closed with %d, want %d", code, direct.CloseReplaced)
	}
	r.consume(t, "dev1", "m1", time.Time{})
	waitfor.True(t, 10*time.Second, "m1 on the original's protocol", func() bool { return lc.Ledger().Acked("m1") })
	if ours.Ledger().Times("m1") != 0 {
		t.Error("the replaced connection got m1")
	}
	r.mustDial(t, sim.DeviceConfig{InstallationID: "dev1"})
	select {
	case <-lc.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the original's connection was not replaced")
	}
	if code, _ := lc.CloseCode(); code != direct.CloseReplaced {
		t.Errorf("closed with %d, want %d", code, direct.CloseReplaced)
	}
	if errs := lc.Errors(); len(errs) != 1 || errs[0].Code != direct.CloseReplaced {
		t.Errorf("error commands %+v, want one of code %d", errs, direct.CloseReplaced)
	}
	if n := r.core.Connected(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}

// TestDirectLCHeartbeat: the SDK's WebSocket pings are answered with pongs; a connection
// silent for --direct-lc-idle is closed with 4008.
func TestDirectLCHeartbeat(t *testing.T) {
	r := newRig(t, direct.Config{LCIdle: 250 * time.Millisecond})
	r.installation(t, "lc1", push.DeviceAndroid, "")
	r.installation(t, "lc2", push.DeviceAndroid, "")
	pinging := lcDevice("lc1")
	pinging.PingEvery = 50 * time.Millisecond
	p := r.mustDialLC(t, pinging)
	silent := r.mustDialLC(t, lcDevice("lc2"))
	select {
	case <-silent.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a silent connection stayed open")
	}
	if code, _ := silent.CloseCode(); code != direct.CloseHeartbeat {
		t.Errorf("silent connection closed with %d, want %d", code, direct.CloseHeartbeat)
	}
	waitfor.True(t, 10*time.Second, "pongs to the pings", func() bool { return p.Pongs() >= 10 })
	select {
	case <-p.Done():
		code, reason := p.CloseCode()
		t.Fatalf("a pinging connection was closed: %d %s", code, reason)
	default:
	}
}

// TestDirectLCAppendDataIsTheMessage: the hand-written data command is the GenericCommand of
// lcproto that says the same, live and offline, with and without data.
func TestDirectLCAppendDataIsTheMessage(t *testing.T) {
	for _, tc := range []struct {
		data    string
		offline bool
		nid     string
		want    string // the JSON the device reads; "" = data as it is ("{}" when empty)
	}{
		{`{"alert":"hi","title":"Deals"}`, false, "", ""}, {`{"alert":"hi"}`, true, "", ""}, {"", false, "", ""},
		// The push's notification id leads the object (one identity across channels).
		{`{"alert":"hi","title":"Deals"}`, false, "n7GdQ2", `{"_nid":"n7GdQ2","alert":"hi","title":"Deals"}`},
		{"", true, "n7GdQ2", `{"_nid":"n7GdQ2"}`},
		{`{"_nid":"mine","alert":"hi"}`, false, "n7GdQ2", `{"_nid":"mine","alert":"hi"}`}, // a custom attribute wins
	} {
		m := push.DirectMessage{ID: "6f1c0a9e2b7d4e1f8a3c5b27", NotificationID: tc.nid, Data: []byte(tc.data)}
		var got lcproto.GenericCommand
		if err := proto.Unmarshal(direct.AppendLCData([]byte("prefix"), &m, tc.offline)[len("prefix"):], &got); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		data := cmp.Or(tc.want, tc.data, "{}")
		want := &lcproto.GenericCommand{Cmd: lcproto.CommandType_data.Enum(), DataMessage: &lcproto.DataCommand{
			Ids: []string{m.ID}, Msg: []*lcproto.JsonObjectMessage{{Data: proto.String(data)}}}}
		if tc.offline {
			want.DataMessage.Offline = proto.Bool(true)
		}
		if !proto.Equal(&got, want) {
			t.Errorf("%+v: got %v, want %v", tc, &got, want)
		}
	}
}
