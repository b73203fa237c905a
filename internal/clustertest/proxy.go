package clustertest

import (
	"io"
	"net"
	"net/url"
	"sync"
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
	wg    sync.WaitGroup
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
	p := &gatewayProxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
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
		out, err := net.Dial("tcp", p.target)
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
