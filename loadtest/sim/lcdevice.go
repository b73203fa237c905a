package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"google.golang.org/protobuf/proto"

	"github.com/pushd/pushd/sender/direct/lcproto"
)

// LCDeviceConfig is one simulated Android device of the original service's SDK, speaking its
// protocol (docs/own-channel.md, section 9): router /v1/route, a WebSocket offering
// lc.protobuf2.1, a login command, data commands acked with one ack command each, WebSocket
// pings as heartbeat. API, AppID, InstallationID, AckDelay, NoAck, Ledger and OnPush are used
// as DeviceConfig says; AppKey and Sign are not (the original's login carries no key).
type LCDeviceConfig struct {
	DeviceConfig
	// SubProtocol is the one offered: lc.protobuf2.1 (the SDK's default) when empty.
	SubProtocol string
	// PingEvery sends a WebSocket ping at this period (the SDK: 180s); 0 sends none.
	PingEvery time.Duration
}

// LCDevice is one connection of a simulated device of the original's SDK.
type LCDevice struct {
	*wsClient
	cfg      LCDeviceConfig
	loggedIn chan struct{}

	mu     sync.Mutex
	errs   []LCError
	pongs  int
	goaway bool
	offIDs map[string]bool
}

// LCError is an error command the server sent.
type LCError struct {
	I      int32
	Code   int32
	Reason string
}

// RouteLC asks the original's router where the installation connects, as the SDK does
// (AppRouterService.getRTMConnectionServer): no key.
func RouteLC(ctx context.Context, api, appID, iid string) (string, error) {
	u := api + "/v1/route?appId=" + url.QueryEscape(appID) + "&installationId=" + url.QueryEscape(iid) + "&secure=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot ask the router: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("router answered %d: %s", resp.StatusCode, b)
	}
	var r struct {
		Server    string `json:"server"`
		Secondary string `json:"secondary"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Server == "" {
		return "", fmt.Errorf("router answered %s", b)
	}
	return r.Server, nil
}

// DialLCDevice asks the router, connects, logs in and waits for the server's loggedin (a
// refusal ends in a *RefusedError with the close code and reason).
func DialLCDevice(ctx context.Context, cfg LCDeviceConfig) (*LCDevice, error) {
	server, err := RouteLC(ctx, cfg.API, cfg.AppID, cfg.InstallationID)
	if err != nil {
		return nil, err
	}
	return DialLCDeviceAt(ctx, server, cfg)
}

// LoginCommand is the login the original's Android SDK sends when its socket opens
// (LCConnectionManager.onOpen, LoginPacket, CommandPacket): cmd login, appId, installationId.
func LoginCommand(appID, iid string) []byte {
	b, err := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_login.Enum(), AppId: &appID, InstallationId: &iid})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return b
}

// AckCommand is the SDK's ack of the ids of one data command (PushAckPacket).
func AckCommand(iid string, ids []string) []byte {
	b, err := proto.Marshal(&lcproto.GenericCommand{Cmd: lcproto.CommandType_ack.Enum(), InstallationId: &iid, AckMessage: &lcproto.AckCommand{Ids: ids}})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return b
}

// DialLCDeviceAt connects to a server URL the router gave.
func DialLCDeviceAt(ctx context.Context, server string, cfg LCDeviceConfig) (*LCDevice, error) {
	if cfg.Ledger == nil {
		cfg.Ledger = NewLedger()
	}
	if cfg.SubProtocol == "" {
		cfg.SubProtocol = "lc.protobuf2.1"
	}
	d := ws.Dialer{Protocols: []string{cfg.SubProtocol}}
	conn, br, hs, err := d.Dial(ctx, server)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", server, err)
	}
	if hs.Protocol != cfg.SubProtocol {
		_ = conn.Close()
		return nil, fmt.Errorf("server selected sub-protocol %q, offered %q", hs.Protocol, cfg.SubProtocol)
	}
	dev := &LCDevice{wsClient: newWSClient(conn, br), cfg: cfg, loggedIn: make(chan struct{}), offIDs: map[string]bool{}}
	dev.wg.Go(dev.read)
	if err := dev.Send(LoginCommand(cfg.AppID, cfg.InstallationID)); err != nil {
		dev.Close()
		return nil, fmt.Errorf("cannot log in: %w", err)
	}
	select {
	case <-dev.loggedIn:
		if cfg.PingEvery > 0 {
			dev.wg.Go(dev.pinger)
		}
		return dev, nil
	case <-dev.done:
		dev.wg.Wait()
		return nil, &RefusedError{Code: dev.code, Reason: dev.reason}
	case <-ctx.Done():
		dev.Close()
		return nil, ctx.Err()
	}
}

// Ledger is the device's ledger.
func (d *LCDevice) Ledger() *Ledger { return d.cfg.Ledger }

// Errors lists the error commands received.
func (d *LCDevice) Errors() []LCError {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]LCError(nil), d.errs...)
}

// Offline says whether message id came marked offline (flushed from the cache at login).
func (d *LCDevice) Offline(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offIDs[id]
}

// Goaway says whether the server sent a goaway command (ask the router again).
func (d *LCDevice) Goaway() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.goaway
}

// Pongs is how many WebSocket pongs the server answered the device's pings with.
func (d *LCDevice) Pongs() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pongs
}

// Send writes a raw binary frame (one command).
func (d *LCDevice) Send(b []byte) error {
	return d.write(ws.NewBinaryFrame(b))
}

// Ping sends a WebSocket ping, the SDK's heartbeat.
func (d *LCDevice) Ping() error {
	return d.write(ws.NewPingFrame(nil))
}

func (d *LCDevice) read() {
	defer close(d.done)
	defer d.conn.Close()
	var once sync.Once
	for {
		op, payload, ok := d.next()
		if !ok {
			return
		}
		switch op {
		case ws.OpPong:
			d.mu.Lock()
			d.pongs++
			d.mu.Unlock()
			continue
		case ws.OpBinary:
		default:
			continue
		}
		var c lcproto.GenericCommand
		if err := proto.Unmarshal(payload, &c); err != nil {
			return
		}
		switch c.GetCmd() {
		case lcproto.CommandType_loggedin:
			once.Do(func() { close(d.loggedIn) })
		case lcproto.CommandType_goaway:
			d.mu.Lock()
			d.goaway = true
			d.mu.Unlock()
		case lcproto.CommandType_error:
			d.mu.Lock()
			d.errs = append(d.errs, LCError{I: c.GetI(), Code: c.GetErrorMessage().GetCode(), Reason: c.GetErrorMessage().GetReason()})
			d.mu.Unlock()
		case lcproto.CommandType_data:
			// As LCPushMessageListener: each msg[i] with ids[i], then one ack of all the ids.
			dm := c.GetDataMessage()
			ids := dm.GetIds()
			for i, m := range dm.GetMsg() {
				if i >= len(ids) {
					break
				}
				data := json.RawMessage(m.GetData())
				nid := lcNID(data)
				dup := d.cfg.Ledger.add(ids[i], nid, data)
				if dm.GetOffline() {
					d.mu.Lock()
					d.offIDs[ids[i]] = true
					d.mu.Unlock()
				}
				if d.cfg.OnPush != nil {
					d.cfg.OnPush(DevicePush{ID: ids[i], NID: nid, Data: data, Dup: dup})
				}
			}
			if !d.cfg.NoAck && len(ids) > 0 {
				d.ackLater(ids)
			}
		}
	}
}

func (d *LCDevice) ackLater(ids []string) {
	send := func() {
		if err := d.Send(AckCommand(d.cfg.InstallationID, ids)); err == nil {
			d.cfg.Ledger.ack(ids)
		}
	}
	if d.cfg.AckDelay == 0 {
		send()
		return
	}
	t := time.AfterFunc(d.cfg.AckDelay, send)
	go func() {
		<-d.done
		t.Stop()
	}()
}

func (d *LCDevice) pinger() {
	t := time.NewTicker(d.cfg.PingEvery)
	defer t.Stop()
	for {
		select {
		case <-d.done:
			return
		case <-t.C:
			if d.Ping() != nil {
				return
			}
		}
	}
}

// lcNID reads the push's notification id from the "_nid" member of a data command's JSON
// (render.KeyNID; pushd puts it there, the original's DataCommand has no field for it).
func lcNID(data json.RawMessage) string {
	var v struct {
		NID string `json:"_nid"`
	}
	_ = json.Unmarshal(data, &v)
	return v.NID
}
