package h2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/pushd/pushd/sender/gateway"
)

// NotProcessedAttempts is how many times Pool.Do puts a request on a connection while the
// server answers "not processed" (GOAWAY, REFUSED_STREAM): sending again cannot duplicate it.
const NotProcessedAttempts = 3

// Pool is what a gateway sender (apns, fcm) keeps of one endpoint: a bounded set of
// connections (gateway.Conns), each redialled when the server closed it or went away. The
// sender encodes its own header blocks and reads its own reply table; Pool issues the request
// and maps a request that got no answer to a gateway.Reply (Reply).
type Pool struct {
	name  string // the gateway in reasons and errors: "apns", "fcm"
	conns *gateway.Conns[*poolSlot]

	// Authority is the endpoint's host[:port] (the :authority to send), Path its escaped path.
	Authority, Path string

	timeout time.Duration // Config.RequestTimeout: a DoBatch attempt's deadline
}

// NewPool returns the pool of at most maxConns connections, each carrying up to
// streamsPerConn requests, to endpoint (an https URL; port 443 unless it names one).
func NewPool(name, endpoint string, cfg Config, maxConns, streamsPerConn int) (*Pool, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cannot build %s client: bad endpoint %q", name, endpoint)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	p := &Pool{name: name, Authority: u.Host, Path: u.EscapedPath(), timeout: cfg.withDefaults().RequestTimeout}
	dial := func() (*poolSlot, error) { return &poolSlot{addr: addr, cfg: cfg}, nil }
	p.conns = gateway.NewBoundedConns(maxConns, streamsPerConn, dial, (*poolSlot).close)
	return p, nil
}

// Len is how many connections the pool holds.
func (p *Pool) Len() int { return p.conns.Len() }

// Close closes every connection; later Do calls fail (Reply: "<name> client closed").
func (p *Pool) Close() { p.conns.Close() }

// Do sends req on one of the pool's connections and reads the answer into res, sending again
// (up to NotProcessedAttempts) while the server did not process it. An error is for Reply.
func (p *Pool) Do(ctx context.Context, req *Request, res *Response) error {
	var err error
	for range NotProcessedAttempts {
		err = p.attempt(ctx, req, res)
		if !errors.Is(err, ErrNotProcessed) {
			break
		}
	}
	return err
}

func (p *Pool) attempt(ctx context.Context, req *Request, res *Response) error {
	slot, err := p.conns.AcquireContext(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return errPoolClosed
	}
	defer slot.Release()
	c, err := slot.C.conn(ctx)
	if err != nil {
		return &dialError{err}
	}
	return c.Do(ctx, req, res)
}

// Reply classifies err, a Do of ctx that got no answer. Every case is a retry; the reason says
// whether the gateway may have acted on it.
func (p *Pool) Reply(ctx context.Context, err error) gateway.Reply {
	var se *StreamError
	var de *dialError
	switch {
	case errors.Is(err, errPoolClosed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: p.name + " client closed"}
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return gateway.TransportReply(err, p.name, "cannot reach "+p.name)
	case errors.Is(err, ErrNotProcessed):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: p.name + " did not process the request"}
	case errors.Is(err, ErrConnLost):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: p.name + " connection lost"}
	case errors.As(err, &se):
		return gateway.Reply{Kind: gateway.KindRetry, Reason: p.name + " stream reset: " + se.Code.String()}
	case errors.As(err, &de):
		return gateway.TransportReply(&url.Error{Op: "Post", URL: p.name, Err: de.err}, p.name, "cannot reach "+p.name)
	}
	return gateway.TransportReply(err, p.name, "unreadable "+p.name+" reply")
}

var errPoolClosed = errors.New("http2 pool closed")

type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// poolSlot is one connection of the set, redialled when the server closed it or went away.
type poolSlot struct {
	addr string
	cfg  Config

	mu sync.Mutex
	c  *Conn
}

func (l *poolSlot) conn(ctx context.Context) (*Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil && l.c.Usable() {
		return l.c, nil
	}
	// A connection that went away is not closed here: its streams at or below the GOAWAY's
	// last-stream-id run to their answer, then it closes itself.
	l.c = nil
	c, err := Dial(ctx, l.addr, l.cfg)
	if err != nil {
		return nil, err
	}
	l.c = c
	return c, nil
}

func (l *poolSlot) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		l.c.Close()
	}
}
