package sim

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobwas/ws"
)

// DeviceConfig is one simulated own-channel Android device (docs/own-channel.md).
type DeviceConfig struct {
	// API is the REST API's base URL (http://host:port), asked GET /1.1/router.
	API            string
	AppID, AppKey  string
	InstallationID string
	// AckDelay delays each ack; NoAck never acks (the messages stay in the offline cache).
	AckDelay time.Duration
	NoAck    bool
	// Sign authenticates with X-SVC-Sign instead of X-SVC-Key.
	Sign bool
	// NoPing never sends heartbeats (the server closes the connection after two periods).
	NoPing bool
	// Ledger counts the pushes received, shared across reconnects (nil: a new one).
	Ledger *Ledger
	// OnPush, when set, is called for each push frame (from the reading goroutine).
	OnPush func(p DevicePush)
}

// DevicePush is one push frame a device received. NID is the push's notification id (our
// frame's nid; the "_nid" member of the original protocol's data). Dup says the device had
// already shown a notification of that id: a wire duplicate, not shown again.
type DevicePush struct {
	ID   string          `json:"id"`
	NID  string          `json:"nid"`
	Data json.RawMessage `json:"data"`
	Exp  int64           `json:"exp,omitempty"`
	Dup  bool            `json:"dup,omitempty"`
}

// Ledger is a device's record of the pushes it received, by message id, and of the
// notifications it showed: once per notification id (a message without one: per message
// id), as an app that dedupes across channels does; every further frame of a shown id is a
// wire duplicate, counted apart. Safe for concurrent use.
type Ledger struct {
	mu    sync.Mutex
	times map[string]int
	order []string
	acked map[string]bool
	data  map[string]json.RawMessage
	nids  map[string]string // message id → notification id
	shown map[string]bool   // notification ids (or message ids) shown
	shows []string
	dups  int
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{times: map[string]int{}, acked: map[string]bool{}, data: map[string]json.RawMessage{},
		nids: map[string]string{}, shown: map[string]bool{}}
}

// add records a frame of message id with notification id nid; dup says the notification
// was already shown (a wire duplicate).
func (l *Ledger) add(id, nid string, data json.RawMessage) (dup bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.times[id] == 0 {
		l.order = append(l.order, id)
		l.data[id] = data
		l.nids[id] = nid
	}
	l.times[id]++
	key := cmp.Or(nid, id)
	if l.shown[key] {
		l.dups++
		return true
	}
	l.shown[key] = true
	l.shows = append(l.shows, key)
	return false
}

// NID is the notification id message id came with ("" when none or not received).
func (l *Ledger) NID(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.nids[id]
}

// Shown lists the notifications shown, each once, by notification id (message id for a
// message without one), in the order shown.
func (l *Ledger) Shown() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.shows...)
}

// WireDuplicates is how many frames came for a notification already shown.
func (l *Ledger) WireDuplicates() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dups
}

// Data is the data of message id as first received.
func (l *Ledger) Data(id string) json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.data[id]
}

func (l *Ledger) ack(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.acked[id] = true
	}
}

// Times is how often message id was received.
func (l *Ledger) Times(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.times[id]
}

// IDs lists the distinct message ids received, in first-arrival order.
func (l *Ledger) IDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// Acked says whether the device acked message id.
func (l *Ledger) Acked(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked[id]
}

// Device is one connection of a simulated device. Close ends it; Done is closed once the
// connection is gone, and CloseCode then tells how the server ended it.
type Device struct {
	*wsClient
	cfg   DeviceConfig
	hello chan Hello
	pongs atomic.Int64
	moved atomic.Bool
}

// Hello is the server's first frame.
type Hello struct {
	V         int     `json:"v"`
	Heartbeat float64 `json:"heartbeat"` // seconds
	Offline   int     `json:"offline"`
}

// Route asks the router where the installation connects.
func Route(ctx context.Context, api, appID, appKey, iid string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/1.1/router?installationId="+url.QueryEscape(iid), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-SVC-Id", appID)
	req.Header.Set("X-SVC-Key", appKey)
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
		Server string `json:"server"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Server == "" {
		return "", fmt.Errorf("router answered %s", b)
	}
	return r.Server, nil
}

// DialDevice asks the router where to connect, connects, and waits for the server's hello
// (a refusal ends in an error with the close code and reason).
func DialDevice(ctx context.Context, cfg DeviceConfig) (*Device, Hello, error) {
	server, err := Route(ctx, cfg.API, cfg.AppID, cfg.AppKey, cfg.InstallationID)
	if err != nil {
		return nil, Hello{}, err
	}
	return DialDeviceAt(ctx, server, cfg)
}

// DialDeviceAt connects to a connect endpoint URL (ws://host:port/1.1/connect).
func DialDeviceAt(ctx context.Context, server string, cfg DeviceConfig) (*Device, Hello, error) {
	if cfg.Ledger == nil {
		cfg.Ledger = NewLedger()
	}
	h := http.Header{"X-SVC-Id": {cfg.AppID}, "X-SVC-Key": {cfg.AppKey}}
	if cfg.Sign {
		ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
		sum := md5.Sum([]byte(ts + cfg.AppKey))
		h = http.Header{"X-SVC-Id": {cfg.AppID}, "X-SVC-Sign": {hex.EncodeToString(sum[:]) + "," + ts}}
	}
	d := ws.Dialer{Header: ws.HandshakeHeaderHTTP(h)}
	conn, br, _, err := d.Dial(ctx, server+"?v=1&installationId="+url.QueryEscape(cfg.InstallationID))
	if err != nil {
		return nil, Hello{}, fmt.Errorf("cannot connect to %s: %w", server, err)
	}
	dev := &Device{wsClient: newWSClient(conn, br), cfg: cfg, hello: make(chan Hello, 1)}
	dev.wg.Go(dev.read)
	select {
	case h := <-dev.hello:
		return dev, h, nil
	case <-dev.done:
		dev.wg.Wait()
		return nil, Hello{}, &RefusedError{Code: dev.code, Reason: dev.reason}
	case <-ctx.Done():
		dev.Close()
		return nil, Hello{}, ctx.Err()
	}
}

// RefusedError is a connection the server closed before its hello.
type RefusedError struct {
	Code   int
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("connection refused with close code %d: %s", e.Code, e.Reason)
}

// Ledger is the device's ledger.
func (d *Device) Ledger() *Ledger { return d.cfg.Ledger }

// Send writes a raw text frame (tests of bad frames).
func (d *Device) Send(b []byte) error {
	return d.write(ws.NewTextFrame(b))
}

// Pongs is how many pongs the server answered the device's pings with.
func (d *Device) Pongs() int64 { return d.pongs.Load() }

// Moved says whether the server sent a moved frame (the installation is another gateway
// node's: ask the router again).
func (d *Device) Moved() bool { return d.moved.Load() }

// Ping sends a protocol ping.
func (d *Device) Ping() error { return d.Send([]byte(`{"op":"ping"}`)) }

// read handles the server's frames until the connection ends.
func (d *Device) read() {
	defer close(d.done)
	defer d.conn.Close()
	var stopPing chan struct{}
	defer func() {
		if stopPing != nil {
			close(stopPing)
		}
	}()
	for {
		op, payload, ok := d.next()
		if !ok {
			return
		}
		if op != ws.OpText {
			continue
		}
		var f struct {
			Op string `json:"op"`
			Hello
			DevicePush
		}
		if err := json.Unmarshal(payload, &f); err != nil {
			return
		}
		switch f.Op {
		case "hello":
			if f.Heartbeat > 0 && !d.cfg.NoPing {
				stopPing = make(chan struct{})
				hb, stop := time.Duration(f.Heartbeat*float64(time.Second)), stopPing
				d.wg.Go(func() { d.pinger(hb, stop) })
			}
			d.hello <- f.Hello
		case "pong":
			d.pongs.Add(1)
		case "moved":
			d.moved.Store(true)
		case "push":
			f.Dup = d.cfg.Ledger.add(f.ID, f.NID, f.Data)
			if !d.cfg.NoAck {
				d.ackLater(f.ID)
			}
			if d.cfg.OnPush != nil {
				d.cfg.OnPush(f.DevicePush)
			}
		}
	}
}

func (d *Device) ackLater(id string) {
	send := func() {
		if err := d.Send([]byte(`{"op":"ack","ids":["` + id + `"]}`)); err == nil {
			d.cfg.Ledger.ack([]string{id})
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

// pinger sends a ping every half heartbeat period until stop.
func (d *Device) pinger(period time.Duration, stop chan struct{}) {
	t := time.NewTicker(max(period/2, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if d.Ping() != nil {
				return
			}
		}
	}
}
