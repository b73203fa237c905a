package direct_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct"
)

// rawDialLC connects like the original's SDK without a client library: the upgrade offering
// lc.protobuf2.1 by hand, the login, the loggedin read, then nothing, so what an idle
// connection costs is the server's.
func rawDialLC(b testing.TB, addr, iid string) net.Conn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: lc.protobuf2.1\r\n\r\n", addr)
	br := bufio.NewReaderSize(conn, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		b.Fatalf("upgrade of %s: %q %v", iid, status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	if err := ws.WriteFrame(conn, ws.MaskFrame(ws.NewBinaryFrame(sim.LoginCommand(testApp, iid)))); err != nil {
		b.Fatal(err)
	}
	h, err := ws.ReadHeader(br)
	if err != nil || h.OpCode != ws.OpBinary {
		b.Fatalf("loggedin of %s: %+v %v", iid, h, err)
	}
	if _, err := io.CopyN(io.Discard, br, h.Length); err != nil {
		b.Fatal(err)
	}
	return conn
}

// BenchmarkDirectLCIdleConnection is BenchmarkDirectIdleConnection for the original's
// protocol: what one idle logged-in connection costs the gateway, with 2,000 open
// (PUSHD_BENCH_DIRECT_CONNS sets another count).
func BenchmarkDirectLCIdleConnection(b *testing.B) {
	conns := 2000
	if v, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_DIRECT_CONNS")); err == nil && v > 0 {
		conns = v
	}
	r := newRig(b, direct.Config{ConnectRate: 1e6})
	r.seedDevices(b, conns)
	b.ReportAllocs()
	firstRSS := -1.0
	for b.Loop() {
		memBefore, rssBefore := memInUse(), rss()
		open := make([]net.Conn, 0, conns)
		for i := range conns {
			open = append(open, rawDialLC(b, r.srv.Addr().String(), "dev"+strconv.Itoa(i)))
		}
		waitfor.True(b, 30*time.Second, "every device attached", func() bool { return r.core.Connected() == conns })
		memAfter, rssAfter := memInUse(), rss()
		b.ReportMetric(float64(memAfter-memBefore)/float64(conns), "heap+stack-B/conn")
		if firstRSS < 0 {
			firstRSS = float64(int64(rssAfter)-int64(rssBefore)) / float64(conns)
		}
		b.ReportMetric(firstRSS, "RSS-B/conn")
		for _, c := range open {
			_ = c.Close()
		}
		waitfor.True(b, 30*time.Second, "every device detached", func() bool { return r.core.Connected() == 0 })
	}
}

// BenchmarkDirectLCAppendData: encoding one data command (the per-delivery cost of this codec).
func BenchmarkDirectLCAppendData(b *testing.B) {
	m := push.DirectMessage{ID: "6f1c0a9e2b7d4e1f8a3c5b27", Data: []byte(`{"alert":"Half price today","title":"Deals","action":"com.example.OPEN","plan":"gold"}`)}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = direct.AppendLCData(buf[:0], &m, false)
	}
}
