package direct

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Close codes of our protocol (docs/own-channel.md). 1000–1011 are RFC 6455's.
const (
	CloseNormal       = 1000
	CloseGoingAway    = 1001 // the gateway stops: reconnect (through the router)
	CloseProtocol     = 1002 // an unmasked or fragmented frame
	CloseTooBig       = 1009 // a frame over the size limit
	CloseInternal     = 1011 // the gateway failed to serve the connection: reconnect later
	CloseBadRequest   = 4000 // installationId missing, or an unsupported protocol version
	CloseUnauthorized = 4001 // unknown app, or a wrong app key or signature
	CloseBadFrame     = 4002 // a frame that is not one of ours
	CloseNotDirect    = 4003 // the installation is not an Android one without vendor
	CloseNotFound     = 4004 // no installation of this installationId in this app
	CloseHeartbeat    = 4008 // silent for two heartbeat periods
	CloseReplaced     = 4009 // a newer connection of the same installation took over
	CloseWriteFailed  = 4010 // the device did not take its frames in time
	CloseMoved        = 4011 // the installation's partition moved (after a moved frame)
	CloseTooMany      = 4029 // too many connects per second for this app: back off
)

// movedReason closes a device of another node's partition (CloseMoved).
const movedReason = "installation served by another gateway node: ask the router again"

// Headers of the connect request (the same the REST API authenticates with).
const (
	headerID   = "X-SVC-Id"
	headerKey  = "X-SVC-Key"
	headerSign = "X-SVC-Sign"
)

// signSkew is how far an X-SVC-Sign timestamp may be from the server clock (the API's default).
const signSkew = 15 * time.Minute

// Apps reads an app for authentication.
type Apps interface {
	GetApp(ctx context.Context, appID string) (push.App, error)
}

// Installations finds the connecting installation.
type Installations interface {
	GetInstallation(ctx context.Context, appID, objectID string) (push.Installation, error)
	LookupDevice(ctx context.Context, appID string, kind push.IDKind, deviceID string) (objectID string, err error)
}

// Server serves our protocol on /1.1/connect: WebSocket upgrade with gobwas/ws on a raw
// listener, JSON text frames; attached connections are read by the epoll loop or a goroutine
// each (Config.ReadLoop).
type Server struct {
	cfg   Config
	core  *Core
	apps  Apps
	insts Installations
	log   *zap.Logger
	lim   *limiter

	connects map[string]*metrics.Counter
	badFrame *metrics.Counter

	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]struct{} // every accepted connection, to close on stop
	closed bool
	// poll is the epoll readiness loop reading idle connections (ReadLoop "epoll"), started
	// by Run; nil: a goroutine per connection.
	poll *poller
}

// NewServer builds the connect endpoint over core.
func NewServer(cfg Config, core *Core, apps Apps, insts Installations, log *zap.Logger, set *metrics.Set) *Server {
	cfg = cfg.WithDefaults()
	s := &Server{cfg: cfg, core: core, apps: apps, insts: insts, log: log.Named("direct"),
		lim: newLimiter(cfg.ConnectRate, cfg.ConnectBurst), open: map[net.Conn]struct{}{},
		connects: map[string]*metrics.Counter{}}
	for _, r := range []string{"ok", "bad_request", "unauthorized", "not_found", "not_direct", "too_many", "moved", "error"} {
		s.connects[r] = set.NewCounter(`pushd_direct_connects_total{result="` + r + `"}`)
	}
	s.badFrame = set.NewCounter(`pushd_direct_bad_frames_total`)
	return s
}

// Start binds the listener. Accepted connections get no TCP keep-alive (Go's default is a
// probe every 15 s): the devices' heartbeats are the liveness check, and a probe to each idle
// device every 15 s would be four times their traffic (twelve times the original SDK's).
func (s *Server) Start(ctx context.Context) error {
	if s.ln != nil {
		return nil
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s for device connections: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address (after Start).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Run accepts connections until ctx ends, then closes every connection (1001, going away) and
// waits for their goroutines.
func (s *Server) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	if s.cfg.ReadLoop == ReadLoopEpoll {
		p, err := newPoller(s)
		if err != nil {
			_ = s.ln.Close()
			return err
		}
		s.poll = p
		defer p.close() // after wg.Wait: no goroutine of the poller uses it then
	}
	stop := context.AfterFunc(ctx, func() { _ = s.ln.Close() })
	defer stop()
	s.log.Info("device connections listening", zap.String("addr", s.ln.Addr().String()))
	var err error
	for {
		conn, aerr := s.ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("cannot accept device connections: %w", aerr)
			}
			break
		}
		if !s.track(conn) {
			_ = conn.Close()
			break
		}
		s.wg.Go(func() {
			if r := s.serveConn(ctx, conn); r != nil {
				s.read(r) // untracks conn when it ends
				return
			}
			s.untrack(conn)
		})
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.core.CloseAll(CloseGoingAway, "server going away")
	s.mu.Lock()
	for c := range s.open {
		_ = c.Close()
	}
	s.mu.Unlock()
	if s.poll != nil {
		s.poll.stop()
	}
	s.wg.Wait()
	return err
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.open[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	_ = c.Close()
}

// handshake is what the upgrade request carried.
type handshake struct {
	path, iid, version string
	appID, key, sign   string
	// lc is the original's sub-protocol the device offered (and the server selected): that
	// protocol is served on the connection (lc.go). Empty: ours.
	lc string
}

// serveConn upgrades, authenticates and attaches the device; it returns the reader of the
// attached connection (nil: the connection is refused or gone).
func (s *Server) serveConn(ctx context.Context, conn net.Conn) *reader {
	_ = conn.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	var hs handshake
	u := ws.Upgrader{
		OnRequest: func(uri []byte) error {
			p, err := url.ParseRequestURI(string(uri))
			if err != nil {
				return ws.RejectConnectionError(ws.RejectionStatus(400), ws.RejectionReason("bad request URI"))
			}
			q := p.Query()
			hs.path, hs.iid, hs.version = p.Path, q.Get("installationId"), q.Get("v")
			return nil
		},
		Protocol: func(p []byte) bool {
			if hs.lc == "" && (string(p) == SubProtocolLC21 || string(p) == SubProtocolLC23) {
				hs.lc = string(p)
				return true
			}
			return false
		},
		OnBeforeUpgrade: func() (ws.HandshakeHeader, error) {
			// Ours is on /1.1/connect; the original's protocol wherever its sub-protocol is
			// offered (the router gives "/").
			if hs.lc == "" && hs.path != "/1.1/connect" {
				return nil, ws.RejectConnectionError(ws.RejectionStatus(404), ws.RejectionReason("no such endpoint: use /1.1/connect"))
			}
			return nil, nil
		},
		OnHeader: func(key, value []byte) error {
			switch {
			case bytes.EqualFold(key, []byte(headerID)):
				hs.appID = string(value)
			case bytes.EqualFold(key, []byte(headerKey)):
				hs.key = string(value)
			case bytes.EqualFold(key, []byte(headerSign)):
				hs.sign = string(value)
			}
			return nil
		},
	}
	if _, err := u.Upgrade(conn); err != nil {
		s.connects["bad_request"].Inc()
		return nil
	}
	if hs.lc != "" {
		return s.serveLC(ctx, conn)
	}
	sess := &wsSession{frameWriter{conn: conn, timeout: s.cfg.WriteTimeout}}
	code, reason, result := s.admit(ctx, &hs)
	s.connects[result].Inc()
	if code != 0 {
		sess.Close(code, reason)
		return nil
	}
	hb := s.cfg.Heartbeat
	err := s.core.Attach(ctx, hs.appID, hs.iid, sess, func(cached int) error {
		return sess.write(helloFrame(hb, cached))
	})
	if errors.Is(err, ErrMoved) {
		sess.Close(CloseMoved, movedReason)
		return nil
	}
	if err != nil {
		s.log.Warn("cannot attach a device", zap.String("app_id", hs.appID), zap.Error(err))
		sess.Close(CloseInternal, "cannot flush the offline cache")
		return nil
	}
	// No deadline is cleared here: the read loop sets its own per frame, and every write its
	// own (clearing the write deadline now could unbound a live write already under way).
	app, iid := hs.appID, hs.iid
	return &reader{
		conn: conn, w: &sess.frameWriter, silent: 2 * hb, idle: "no frame for two heartbeat periods",
		step:   func() (int, string, bool) { return s.readFrame(ctx, conn, sess, app, iid) },
		close:  sess.Close,
		detach: func() { s.core.Detach(app, iid, sess) },
	}
}

// admit checks the handshake: version, app and key, rate, installation. A non-zero code
// refuses the connection with that close code and reason.
func (s *Server) admit(ctx context.Context, hs *handshake) (int, string, string) {
	if hs.version != "" && hs.version != strconv.Itoa(ProtocolVersion) {
		return CloseBadRequest, "unsupported protocol version " + hs.version + ": this server speaks v=1", "bad_request"
	}
	if hs.iid == "" {
		return CloseBadRequest, "missing installationId query parameter", "bad_request"
	}
	if hs.appID == "" || (hs.key == "" && hs.sign == "") {
		return CloseUnauthorized, "missing header X-SVC-Id with X-SVC-Key or X-SVC-Sign", "unauthorized"
	}
	app, err := s.apps.GetApp(ctx, hs.appID)
	if errors.Is(err, store.ErrNotFound) {
		return CloseUnauthorized, "unauthorized", "unauthorized"
	}
	if err != nil {
		s.log.Warn("cannot read an app for a device connection", zap.String("app_id", hs.appID), zap.Error(err))
		return CloseInternal, "cannot check the app: retry later", "error"
	}
	if !authorized(&app, hs.key, hs.sign, time.Now()) {
		return CloseUnauthorized, "unauthorized", "unauthorized"
	}
	return s.admitDevice(ctx, &app, hs.iid)
}

// admitDevice checks what both protocols check once the app is known: the connect rate, and
// an Android installation of this id without vendor (or with one, under a channel policy
// that uses the own channel).
func (s *Server) admitDevice(ctx context.Context, app *push.App, iid string) (int, string, string) {
	if !s.lim.allow(app.ID, time.Now()) {
		return CloseTooMany, "too many connects for this app: retry later", "too_many"
	}
	if !s.core.Owns(iid) { // before the store reads: a device of another node costs none
		return CloseMoved, movedReason, "moved"
	}
	oid, err := s.insts.LookupDevice(ctx, app.ID, push.KindIID, iid)
	var inst push.Installation
	if err == nil {
		inst, err = s.insts.GetInstallation(ctx, app.ID, oid)
	}
	if errors.Is(err, store.ErrNotFound) {
		return CloseNotFound, "installation not found", "not_found"
	}
	if err != nil {
		s.log.Warn("cannot read an installation for a device connection", zap.String("app_id", app.ID), zap.Error(err))
		return CloseInternal, "cannot check the installation: retry later", "error"
	}
	// A hybrid installation (with a vendor) may hold an own-channel connection too when the
	// app's channel policy uses the own channel (own_first, vendor_first, own_only).
	if inst.DeviceType != push.DeviceAndroid ||
		(inst.DeliveryChannel(app.Settings.Edition) != push.ChannelDirect && !push.AdmitsHybrid(app.Settings.ChannelPolicy)) {
		return CloseNotDirect, "installation is not an Android one without vendor", "not_direct"
	}
	return 0, "", "ok"
}

// authorized checks an app key (or master key) or an X-SVC-Sign, as the REST API does.
func authorized(app *push.App, key, sign string, now time.Time) bool {
	if key != "" {
		k, master, _ := strings.Cut(key, ",")
		want := app.AppKey
		if master == "master" {
			want = app.MasterKey
		}
		return want != "" && subtle.ConstantTimeCompare([]byte(k), []byte(want)) == 1
	}
	parts := strings.Split(sign, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.UnixMilli(ts)); d > signSkew || d < -signSkew {
		return false
	}
	want := app.AppKey
	if len(parts) == 3 {
		if parts[2] != "master" {
			return false
		}
		want = app.MasterKey
	}
	sum := md5.Sum([]byte(parts[1] + want))
	return want != "" && subtle.ConstantTimeCompare([]byte(strings.ToLower(parts[0])), []byte(hex.EncodeToString(sum[:]))) == 1
}

// readFrame reads and handles one of the device's frames (the read deadline is the caller's);
// it returns true to go on, or false with the close code and reason to end with (0 when the
// connection is already gone).
func (s *Server) readFrame(ctx context.Context, conn net.Conn, sess *wsSession, app, iid string) (int, string, bool) {
	h, err := ws.ReadHeader(conn)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return CloseHeartbeat, "no frame for two heartbeat periods", false
		}
		return 0, "", false
	}
	if h.Length > int64(s.cfg.MaxFrame) {
		s.badFrame.Inc()
		return CloseTooBig, "frame larger than " + strconv.Itoa(s.cfg.MaxFrame) + " bytes", false
	}
	if !h.Masked {
		s.badFrame.Inc()
		return CloseProtocol, "client frames must be masked", false
	}
	if !h.Fin || h.OpCode == ws.OpContinuation {
		s.badFrame.Inc()
		return CloseProtocol, "fragmented frames are not supported", false
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(conn, payload); err != nil {
		return 0, "", false
	}
	ws.Cipher(payload, h.Mask, 0)
	switch h.OpCode {
	case ws.OpClose:
		return CloseNormal, "", false
	case ws.OpPing:
		if err := sess.writeFrame(ws.NewPongFrame(payload)); err != nil {
			return 0, "", false
		}
	case ws.OpPong:
	case ws.OpBinary:
		s.badFrame.Inc()
		return CloseBadFrame, "binary frames are not part of protocol v1", false
	case ws.OpText:
		f, err := DecodeFrame(payload)
		if err != nil {
			s.badFrame.Inc()
			return CloseBadFrame, err.Error(), false
		}
		switch f.Op {
		case OpPing:
			if err := sess.write(framePong); err != nil {
				return 0, "", false
			}
		case OpAck:
			if err := s.core.Ack(ctx, app, iid, f.IDs); err != nil {
				s.log.Warn("cannot record acks", zap.String("app_id", app), zap.Error(err))
			}
		}
	default:
		s.badFrame.Inc()
		return CloseProtocol, "unknown opcode", false
	}
	return 0, "", true
}

// wsSession writes our frames (text) to one connection.
type wsSession struct{ frameWriter }

func (w *wsSession) write(payload []byte) error {
	return w.writeFrame(ws.NewTextFrame(payload))
}

// Deliver implements Session: every push frame of msgs in one write.
func (w *wsSession) Deliver(msgs []push.DirectMessage) error {
	return w.deliver(msgs, ws.OpText, AppendPush)
}

// Close implements Session: a close frame with code and reason (none when code is 0),
// after a moved frame for CloseMoved.
func (w *wsSession) Close(code int, reason string) {
	var first func()
	if code == CloseMoved {
		first = func() { _ = ws.WriteFrame(w.conn, ws.NewTextFrame(frameMoved)) }
	}
	w.close(code, reason, first)
}

// limiter is a token bucket per app.
type limiter struct {
	rate  float64
	burst float64
	mu    sync.Mutex
	apps  map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	return &limiter{rate: rate, burst: float64(burst), apps: map[string]*bucket{}}
}

func (l *limiter) allow(app string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.apps[app]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.apps[app] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
