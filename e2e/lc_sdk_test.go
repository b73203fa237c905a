package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
)

// The frames of the original's Android SDK, built field by field as its sources build them
// (leancloud/java-unified-sdk, module realtime), with protowire rather than pushd's own .proto,
// so that a wrong field number on either side fails here. A Java protobuf message is written
// in field-number order, as these are.

// sdkLogin is the login LCConnectionManager.onOpen sends at once when the socket opens
// (realtime/src/main/java/cn/leancloud/session/LCConnectionManager.java): a LoginPacket
// (realtime/src/main/java/cn/leancloud/command/LoginPacket.java) whose CommandPacket base
// (realtime/src/main/java/cn/leancloud/command/CommandPacket.java) sets cmd = login (8, field
// 1), appId (field 3) and installationId (field 6), and no i (requestId unset); with a system
// reporter, loginMessage (field 100) holds a SystemInfo (field 1). SystemInfo's inner field
// numbers are not in the stored sources: an opaque stand-in is sent, which the gateway must
// accept and ignore.
func sdkLogin(appID, iid string, systemInfo bool) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 8) // CommandType.login
	b = protowire.AppendTag(b, 3, protowire.BytesType)
	b = protowire.AppendString(b, appID)
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendString(b, iid)
	if systemInfo {
		var si []byte
		si = protowire.AppendTag(si, 1, protowire.VarintType)
		si = protowire.AppendVarint(si, 0)
		si = protowire.AppendTag(si, 2, protowire.BytesType)
		si = protowire.AppendString(si, "Google/google/Pixel 7")
		var login []byte
		login = protowire.AppendTag(login, 1, protowire.BytesType)
		login = protowire.AppendBytes(login, si)
		b = protowire.AppendTag(b, 100, protowire.BytesType)
		b = protowire.AppendBytes(b, login)
	}
	return b
}

// sdkAck is the ack LCPushMessageListener.onMessageArriving sends for the ids of one data
// command (realtime/src/main/java/cn/leancloud/push/LCPushMessageListener.java, through
// WindTalker.assemblePushAckPacket): a PushAckPacket
// (realtime/src/main/java/cn/leancloud/command/PushAckPacket.java) with cmd = ack (3, field 1),
// installationId (field 6), and ackMessage (field 105) holding the ids (AckCommand field 10).
func sdkAck(iid string, ids []string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 3) // CommandType.ack
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	b = protowire.AppendString(b, iid)
	var ack []byte
	for _, id := range ids {
		ack = protowire.AppendTag(ack, 10, protowire.BytesType)
		ack = protowire.AppendString(ack, id)
	}
	b = protowire.AppendTag(b, 105, protowire.BytesType)
	return protowire.AppendBytes(b, ack)
}

// sdkCommand is what the SDK reads of a server command: cmd (field 1), service (field 8), and
// a data command (field 101: ids 1, msg 2 of JsonObjectMessage{data 1}, offline 3) as
// LCConnectionManager.onMessage and LCPushMessageListener read them.
type sdkCommand struct {
	cmd        uint64
	service    *uint64
	ids, datas []string
	offline    bool
}

func parseSDKCommand(t *testing.T, b []byte) sdkCommand {
	t.Helper()
	var c sdkCommand
	each(t, b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) {
		switch {
		case num == 1 && typ == protowire.VarintType:
			c.cmd = n
		case num == 8 && typ == protowire.VarintType:
			c.service = &n
		case num == 101 && typ == protowire.BytesType:
			each(t, v, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) {
				switch {
				case num == 1 && typ == protowire.BytesType:
					c.ids = append(c.ids, string(v))
				case num == 2 && typ == protowire.BytesType:
					each(t, v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) {
						if num == 1 && typ == protowire.BytesType {
							c.datas = append(c.datas, string(v))
						}
					})
				case num == 3 && typ == protowire.VarintType:
					c.offline = n != 0
				}
			})
		}
	})
	return c
}

// each walks the fields of one message: bytes fields give v, varints n.
func each(t *testing.T, b []byte, f func(protowire.Number, protowire.Type, []byte, uint64)) {
	t.Helper()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				t.Fatal(protowire.ParseError(m))
			}
			f(num, typ, nil, v)
			b = b[m:]
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				t.Fatal(protowire.ParseError(m))
			}
			f(num, typ, v, 0)
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				t.Fatal(protowire.ParseError(m))
			}
			b = b[m:]
		}
	}
}

// sdkConn is one connection opened as the SDK opens it.
type sdkConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// sdkRoute asks the router as AppRouter.fetchRTMServerFromRemote does
// (core/src/main/java/cn/leancloud/service/AppRouterService.java: GET /v1/route with appId,
// installationId and secure=1, no key) and returns the server to connect to.
func sdkRoute(t *testing.T, base, appID, iid string) string {
	t.Helper()
	res, err := http.Get(base + "/v1/route?appId=" + url.QueryEscape(appID) + "&installationId=" + url.QueryEscape(iid) + "&secure=1")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var r struct { // core/src/main/java/cn/leancloud/service/RTMConnectionServerResponse.java
		Server, Secondary string
		TTL               int64
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil || r.Server == "" || r.Secondary == "" || r.TTL <= 0 {
		t.Fatalf("route: %d %s", res.StatusCode, b)
	}
	return r.Server
}

// sdkDial opens the WebSocket as StandardWebSocketClient does, offering lc.protobuf2.1
// (realtime/src/main/java/cn/leancloud/websocket/StandardWebSocketClient.java), and checks the
// server selected it (the client's draft refuses a handshake with another one).
func sdkDial(t *testing.T, server string) *sdkConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, br, hs, err := ws.Dialer{Protocols: []string{"lc.protobuf2.1"}}.Dial(ctx, server)
	if err != nil {
		t.Fatalf("connect to %s: %v", server, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if hs.Protocol != "lc.protobuf2.1" {
		t.Fatalf("server selected sub-protocol %q", hs.Protocol)
	}
	if br == nil {
		br = bufio.NewReader(conn)
	}
	return &sdkConn{conn: conn, r: br}
}

func (c *sdkConn) send(t *testing.T, b []byte) {
	t.Helper()
	if err := ws.WriteFrame(c.conn, ws.MaskFrame(ws.NewBinaryFrame(b))); err != nil {
		t.Fatal(err)
	}
}

// next reads the next binary frame (answering pings, as the client library does).
func (c *sdkConn) next(t *testing.T) sdkCommand {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(pushTimeout))
	for {
		h, err := ws.ReadHeader(c.r)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		b := make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, b); err != nil {
			t.Fatal(err)
		}
		switch h.OpCode {
		case ws.OpBinary:
			return parseSDKCommand(t, b)
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(b)
			t.Fatalf("server closed: %d %s", code, reason)
		case ws.OpPing:
			_ = ws.WriteFrame(c.conn, ws.MaskFrame(ws.NewPongFrame(b)))
		}
	}
}

// TestE2ELCSDKFixtures: an installed app of the original SDK, pointed at pushd, with frames
// built as the SDK builds them: route, login, a push as a data command (the rendered Android
// payload), its ack (arrival counted), then a push while the app is away, delivered marked
// offline after it logs in again, and acked.
func TestE2ELCSDKFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	data := t.TempDir()
	c := prepareOwnApp(t, data)
	p := startPushd(t, data)
	c.base = p.base
	const iid = "0b5d3a5e-7c1f-4d8e-9f2a-1c3b5d7e9f10"
	c.createInstallation(t, map[string]any{"deviceType": "android", "installationId": iid})

	server := sdkRoute(t, c.base, c.appID, iid)
	dev := sdkDial(t, server)
	dev.send(t, sdkLogin(c.appID, iid, true))
	if got := dev.next(t); got.cmd != 15 || got.service == nil || *got.service != 0 { // loggedin, push service
		t.Fatalf("login answered %+v, want loggedin with service 0", got)
	}
	payload := map[string]any{"alert": "from pushd", "title": "Deals", "badge": 1, "plan": "gold",
		"_notificationChannel": "offers", "android": map[string]any{"action": "com.example.OPEN"}}
	// The push's notification id leads the JSON (docs/own-channel.md 9.4).
	const wantData = `{"_nid":"sdkreplay1","_notificationChannel":"offers","action":"com.example.OPEN","alert":"from pushd","plan":"gold","title":"Deals"}`
	oid := c.push(t, map[string]any{"where": map[string]any{"installationId": iid}, "data": payload, "notification_id": "sdkreplay1"})
	got := dev.next(t)
	if got.cmd != 9 || len(got.ids) != 1 || len(got.datas) != 1 || got.offline { // data
		t.Fatalf("push arrived as %+v, want one live data message", got)
	}
	if got.datas[0] != wantData {
		t.Errorf("data %s, want %s", got.datas[0], wantData)
	}
	dev.send(t, sdkAck(iid, got.ids))
	waitfor.True(t, pushTimeout, "the arrival counted", func() bool { return c.ownRecord(t, oid).Arrivals == 1 })
	_ = dev.conn.Close() // the app goes away without a close frame (network lost)

	oid2 := c.push(t, map[string]any{"where": map[string]any{"installationId": iid}, "data": map[string]any{"alert": "while away"}, "notification_id": "sdkreplay2"})
	c.waitDone(t, oid2)
	dev = sdkDial(t, sdkRoute(t, c.base, c.appID, iid))
	dev.send(t, sdkLogin(c.appID, iid, false))
	if got := dev.next(t); got.cmd != 15 {
		t.Fatalf("login answered %+v", got)
	}
	got = dev.next(t)
	if got.cmd != 9 || len(got.ids) != 1 || !got.offline || got.datas[0] != `{"_nid":"sdkreplay2","alert":"while away"}` {
		t.Fatalf("offline message arrived as %+v", got)
	}
	dev.send(t, sdkAck(iid, got.ids))
	var rec ownRecord
	waitfor.True(t, pushTimeout, "the offline message's arrival counted", func() bool {
		rec = c.ownRecord(t, oid2)
		return rec.Arrivals == 1
	})
	if rec.Status != push.StatusDone || rec.Devices != 1 || rec.LCSuccesses != 1 || rec.Failures != 0 {
		t.Errorf("record %+v", rec)
	}
	if r := c.ownRecord(t, oid); r.Devices != 1 || r.LCSuccesses != 1 || r.Arrivals != 1 {
		t.Errorf("first record %+v", r)
	}
	if err := p.stop(stopTimeout); err != nil {
		t.Errorf("pushd exit after SIGTERM: %v", err)
	}
}
