package clustertest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// gatewayProxy is a node's own TCP path to a simulator: the node's sender pools connect to
// the simulators through it, so that Kill can cut them as a dying process's connections end.
type gatewayProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	// src is the loopback address the proxy's connections to the simulator come from, its
	// own: how the simulator tells this node from the others (ports alone would not do:
	// Linux reuses a closed loopback connection's port at once).
	src net.IP
	wg  sync.WaitGroup
}

// newGatewayProxy listens on loopback for targetURL (https://host:port) and returns the
// proxy and the URL the node uses instead (same scheme and path, the proxy's address). It is
// closed when t ends.
func newGatewayProxy(t testing.TB, targetURL string) (*gatewayProxy, string) {
	t.Helper()
	u, err := url.Parse(targetURL)
	if err != nil {
		t.Fatalf("simulator URL %q: %v", targetURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot listen for a gateway proxy: %v", err)
	}
	p := &gatewayProxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}, src: nextSource()}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *gatewayProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: p.src}}
		out, err := d.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			_ = in.Close()
			_ = out.Close()
			continue
		}
		p.wg.Add(2)
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

func (p *gatewayProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// dialed says whether addr (host:port) is the address of a connection the proxy opened.
func (p *gatewayProxy) dialed(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && net.ParseIP(host).Equal(p.src)
}

// sources counts the proxies made in this process: each gets the next loopback address
// from 127.1.0.1 on (Linux routes all of 127/8 to the loopback interface).
var sources atomic.Uint32

func nextSource() net.IP {
	n := sources.Add(1)
	return net.IPv4(127, 1, byte(n>>8), byte(n))
}

// pipe copies one direction and closes both ends when it ends.
func (p *gatewayProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// cut closes every connection through the proxy and refuses new ones.
func (p *gatewayProxy) cut() {
	p.mu.Lock()
	p.down = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

func (p *gatewayProxy) close() {
	p.cut()
	_ = p.ln.Close()
	p.wg.Wait()
}
