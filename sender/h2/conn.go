package h2

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pushd/pushd/internal/rawtcp"
	"github.com/pushd/pushd/sender/gateway"
)

// Config are the settings of one connection.
type Config struct {
	// TLS is the client TLS configuration (nil: system roots); NextProtos is set to h2.
	TLS *tls.Config
	// DialTimeout bounds TCP+TLS setup and the server's first SETTINGS (default 20s).
	DialTimeout time.Duration
	// RequestTimeout bounds one Do once it is queued on the connection (default 30s).
	RequestTimeout time.Duration
	// ReadIdleTimeout: a PING checks a connection that received no frame for this long
	// (default 15s); PingTimeout closes it when nothing arrives for that long after (default 15s).
	ReadIdleTimeout time.Duration
	PingTimeout     time.Duration
	// MaxBody is the longest response body kept (default 2048; longer ones are cut). Gateways
	// answer errors with a short JSON object.
	MaxBody int
}

func (c Config) withDefaults() Config {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 20 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.ReadIdleTimeout <= 0 {
		c.ReadIdleTimeout = 15 * time.Second
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = 15 * time.Second
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 2048
	}
	return c
}

// ErrNotProcessed matches every error of a request the server cannot have acted on: sending it
// again cannot duplicate it.
var ErrNotProcessed = errors.New("http2 request not processed")

// ErrConnLost matches the error of a request whose connection failed after the request was
// handed to the socket: the server may or may not have acted on it.
var ErrConnLost = errors.New("http2 connection lost")

// ErrTimeout is Do's error when Config.RequestTimeout passes; it matches
// context.DeadlineExceeded. The server may or may not have acted on the request.
var ErrTimeout = fmt.Errorf("http2 request timed out: %w", context.DeadlineExceeded)

type notProcessedError string

func (e notProcessedError) Error() string        { return "http2 request not processed: " + string(e) }
func (e notProcessedError) Is(target error) bool { return target == ErrNotProcessed }

const (
	errRefused     = notProcessedError("stream refused")
	errAboveGoAway = notProcessedError("stream above the GOAWAY's last stream id")
	errUnusable    = notProcessedError("connection closed or going away")
	errNotSent     = notProcessedError("connection failed before the request was sent")
)

type connLostError struct{ cause error }

func (e *connLostError) Error() string        { return "http2 connection lost: " + e.cause.Error() }
func (e *connLostError) Is(target error) bool { return target == ErrConnLost }
func (e *connLostError) Unwrap() error        { return e.cause }

// StreamError is a stream the server reset with a code other than REFUSED_STREAM: it may
// have acted on the request.
type StreamError struct{ Code http2.ErrCode }

func (e *StreamError) Error() string { return "http2 stream reset: " + e.Code.String() }

// Request is one request: POST, https, Path+PathSuffix, the header block fragments in order
// (BlockEncoder output, shared across requests) and Body (shared: never modified).
type Request struct {
	Path, PathSuffix string
	Header           [3][]byte
	Body             []byte
}

// Response is a request's answer. Body is kept only for statuses other than 200.
type Response struct {
	Status     int
	RetryAfter string
	Body       []byte
}

const (
	// recvStreamWindow and recvConnWindow are the receive windows we grant: responses are short,
	// so they are never the limit.
	recvStreamWindow = 1 << 20
	recvConnWindow   = 1 << 24
	writeBufSize     = 32 << 10
	// maxHeaderBatch bounds the streams one planning pass starts, so control frames (PING
	// and SETTINGS acks) and flushes are not held back behind a long queue.
	maxHeaderBatch = 64
	maxStreamID    = 1<<31 - 1
)

// Conn is one HTTP/2 client connection. See the package doc.
type Conn struct {
	cfg    Config
	nc     net.Conn
	bw     *bufio.Writer
	fr     *http2.Framer // writes every frame; reads those rd leaves to it
	rd     frameReader
	wake   chan struct{}
	closed chan struct{}
	frames atomic.Uint64 // frames read, for the idle check

	// Reader only.
	dec           *hpack.Decoder
	curID         uint32 // stream whose header block is being decoded
	curEnd        bool   // that block's HEADERS frame ended the stream
	curStatus     int
	curRetryAfter string
	recvUnacked   int // connection-level bytes received since the last WINDOW_UPDATE

	// Writer only.
	ops      []op
	hbuf     []byte
	maxFrame int // snapshot taken while planning

	mu         sync.Mutex
	streams    map[uint32]*stream // started and not finished
	waiting    []*stream          // queued, not started
	blocked    []*stream          // started, body not fully sent for lack of window
	active     int
	maxStreams int
	peerWindow int32 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	sendWindow int32 // connection-level send window
	peerFrame  int   // the server's SETTINGS_MAX_FRAME_SIZE
	nextID     uint32
	handed     uint32 // highest stream id whose frames may have reached the socket
	goAway     bool
	err        error
	ctl        control
}

// control are frames the reader (or health check, or a cancel) asks the writer to send.
type control struct {
	settingsAcks int
	pingAcks     [][8]byte
	ping         bool
	connWindow   uint32
	streamWins   []idVal
	resets       []idVal
}

type idVal struct{ id, val uint32 }

type opKind uint8

const (
	opHeaders opKind = iota
	opData
)

type op struct {
	kind      opKind
	end       bool
	id        uint32
	path, sfx string
	header    [3][]byte
	data      []byte
}

// stream is one request's state; pooled. Fields under Conn.mu: id, sent, sendWin, recvd,
// status, retryAfter and body. The reader finds a stream by its id in Conn.streams and
// touches it only under Conn.mu while it is there, taking it off (endLocked) under the same
// lock when its answer is complete: once a stream left the map (any goroutine may end it, and
// fail empties the map) its waiter may have pooled it for another request.
type stream struct {
	req        Request
	id         uint32
	sent       int
	sendWin    int32
	recvd      int
	status     int
	retryAfter string
	body       []byte
	err        error
	done       chan struct{}
	timer      *time.Timer
	grp        *group // set: a DoBatch request, signalled through its group instead of done
	// slot is a DoBatch request's stream of the pool's connection set, given back as soon as
	// the stream ends so that other requests (of this batch too) can take it.
	slot *gateway.Conn[*poolSlot]
}

// signal tells the waiter that s ended (s.err and the response are set).
func (s *stream) signal() {
	if s.slot != nil {
		s.slot.Release()
		s.slot = nil
	}
	if g := s.grp; g != nil {
		if g.left.Add(-1) == 0 {
			g.done <- struct{}{}
		}
		return
	}
	s.done <- struct{}{}
}

var streamPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &stream{done: make(chan struct{}, 1), timer: t}
}}

// Dial connects to addr (host:port) over TLS with ALPN h2 and waits for the server's SETTINGS.
func Dial(ctx context.Context, addr string, cfg Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLS != nil {
		tc = cfg.TLS.Clone()
	}
	tc.NextProtos = []string{http2.NextProtoTLS}
	if tc.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cannot connect to %s: %w", addr, err)
		}
		tc.ServerName = host
	}
	// TCP, then TLS by hand rather than tls.Dialer: TLS runs on a rawtcp connection, whose
	// reads and writes do not wake the runtime's sysmon (package rawtcp).
	ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 15 * time.Second}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s: %w", addr, err)
	}
	nc := tls.Client(rawtcp.Wrap(raw), tc)
	if err := nc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("cannot connect to %s: %w", addr, err)
	}
	if p := nc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		_ = nc.Close()
		return nil, fmt.Errorf("cannot speak http2 to %s: the server chose protocol %q", addr, p)
	}
	return NewConn(nc, cfg)
}

// NewConn runs the HTTP/2 client handshake over an established connection (TLS already done,
// or cleartext prior knowledge in tests) and starts the connection's goroutines.
func NewConn(nc net.Conn, cfg Config) (*Conn, error) {
	cfg = cfg.withDefaults()
	c := &Conn{
		cfg: cfg, nc: nc,
		bw:         bufio.NewWriterSize(nc, writeBufSize),
		wake:       make(chan struct{}, 1),
		closed:     make(chan struct{}),
		streams:    make(map[uint32]*stream),
		maxStreams: 100,
		peerWindow: 65535,
		sendWindow: 65535,
		peerFrame:  16384,
		nextID:     1,
	}
	br := bufio.NewReaderSize(nc, readBufSize)
	c.fr = http2.NewFramer(c.bw, br)
	c.fr.SetMaxReadFrameSize(maxReadFrame) // what we advertise (the default)
	c.rd = frameReader{br: br, fr: c.fr}
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(16 << 10)
	if err := c.handshake(); err != nil {
		_ = nc.Close()
		return nil, err
	}
	go c.readLoop()
	go c.writeLoop()
	go c.health()
	c.kick() // the SETTINGS ack
	return c, nil
}

func (c *Conn) handshake() error {
	_ = c.nc.SetDeadline(time.Now().Add(c.cfg.DialTimeout))
	defer func() { _ = c.nc.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(c.bw, http2.ClientPreface); err != nil {
		return fmt.Errorf("cannot write http2 preface: %w", err)
	}
	if err := c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: recvStreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 64 << 10},
	); err != nil {
		return fmt.Errorf("cannot write http2 settings: %w", err)
	}
	if err := c.fr.WriteWindowUpdate(0, recvConnWindow-65535); err != nil {
		return fmt.Errorf("cannot write http2 window update: %w", err)
	}
	if err := c.bw.Flush(); err != nil {
		return fmt.Errorf("cannot start http2: %w", err)
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		return fmt.Errorf("cannot read the server's http2 settings: %w", err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return fmt.Errorf("cannot start http2: the server's first frame is %v, not SETTINGS", f.Header().Type)
	}
	return c.applySettings(sf)
}

// Do sends req and waits for its response, ctx's end or Config.RequestTimeout. On success
// res holds the status, Retry-After and (for statuses other than 200) the body, appended
// to res.Body[:0].
func (c *Conn) Do(ctx context.Context, req *Request, res *Response) error {
	s := streamPool.Get().(*stream)
	s.req = *req
	s.id, s.sent, s.recvd, s.status, s.retryAfter, s.body, s.err, s.grp, s.slot = 0, 0, 0, 0, "", s.body[:0], nil, nil, nil
	c.mu.Lock()
	if c.err != nil || c.goAway {
		c.mu.Unlock()
		s.req = Request{}
		streamPool.Put(s)
		return errUnusable
	}
	c.waiting = append(c.waiting, s)
	c.mu.Unlock()
	c.kick()
	s.timer.Reset(c.cfg.RequestTimeout)
	var err error
	select {
	case <-s.done:
	case <-ctx.Done():
		err = ctx.Err()
	case <-s.timer.C:
		err = ErrTimeout
	}
	s.timer.Stop()
	if err != nil {
		if c.cancel(s) {
			return err
		}
		<-s.done // finished meanwhile: use the answer
	}
	err = s.err
	if err == nil {
		res.Status, res.RetryAfter = s.status, s.retryAfter
		res.Body = append(res.Body[:0], s.body...)
	}
	s.req = Request{}
	streamPool.Put(s)
	return err
}

// cancel takes s off the connection; false when it already finished (its done is coming).
func (c *Conn) cancel(s *stream) bool {
	c.mu.Lock()
	if i := slices.Index(c.waiting, s); i >= 0 {
		c.waiting = slices.Delete(c.waiting, i, i+1)
		c.mu.Unlock()
		s.req = Request{}
		streamPool.Put(s)
		return true
	}
	if s.id != 0 && c.streams[s.id] == s {
		idle := c.endLocked(s)
		c.ctl.resets = append(c.ctl.resets, idVal{s.id, uint32(http2.ErrCodeCancel)})
		c.mu.Unlock()
		c.kick()
		if idle {
			c.fail(errUnusable)
		}
		return true // s is dropped, not pooled (a rare path)
	}
	c.mu.Unlock()
	return false
}

// Usable reports whether new requests may go on c.
func (c *Conn) Usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && !c.goAway
}

// Close closes the connection; requests in flight fail.
func (c *Conn) Close() { c.fail(errors.New("connection closed by the client")) }

func (c *Conn) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// finishLocked removes a started stream; c.mu held.
func (c *Conn) finishLocked(s *stream) {
	delete(c.streams, s.id)
	c.active--
	if i := slices.Index(c.blocked, s); i >= 0 {
		c.blocked = slices.Delete(c.blocked, i, i+1)
	}
	if len(c.waiting) > 0 {
		c.kick()
	}
}

// endLocked takes s, a started stream found in c.streams under the c.mu held, off c. It
// returns whether that left c idle after a GOAWAY, for ended.
func (c *Conn) endLocked(s *stream) (idle bool) {
	c.finishLocked(s)
	return c.goAway && c.active == 0
}

// ended signals the waiter of s, taken off c by endLocked, with err (nil: the response is in
// s), and closes c when endLocked found it idle.
func (c *Conn) ended(s *stream, err error, idle bool) {
	s.err = err
	s.signal()
	if idle {
		c.fail(errUnusable)
	}
}

// fail closes the connection with cause and ends every stream: those whose frames never
// reached the socket as not processed, the others as lost.
func (c *Conn) fail(cause error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = cause
	close(c.closed)
	started := make([]*stream, 0, len(c.streams))
	for _, s := range c.streams {
		started = append(started, s)
	}
	waiting := c.waiting
	c.streams, c.waiting, c.blocked, c.active = map[uint32]*stream{}, nil, nil, 0
	handed := c.handed
	c.mu.Unlock()
	_ = c.nc.Close()
	lost := error(&connLostError{cause})
	for _, s := range started {
		s.err = lost
		if s.id > handed {
			s.err = errNotSent
		}
		s.signal()
	}
	for _, s := range waiting {
		s.err = errNotSent
		s.signal()
	}
}

func (c *Conn) health() {
	t := time.NewTicker(c.cfg.ReadIdleTimeout)
	defer t.Stop()
	last := c.frames.Load()
	for {
		select {
		case <-c.closed:
			return
		case <-t.C:
		}
		n := c.frames.Load()
		if n != last {
			last = n
			continue
		}
		c.mu.Lock()
		c.ctl.ping = true
		c.mu.Unlock()
		c.kick()
		pt := time.NewTimer(c.cfg.PingTimeout)
		select {
		case <-c.closed:
			pt.Stop()
			return
		case <-pt.C:
		}
		if c.frames.Load() == n {
			c.fail(errors.New("no answer to ping"))
			return
		}
		last = c.frames.Load()
	}
}
