package direct_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"github.com/gobwas/ws"

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
// protocol: what one idle logged-in connection costs the gateway with each read loop, with
// 2,000 open (PUSHD_BENCH_DIRECT_CONNS sets another count).
func BenchmarkDirectLCIdleConnection(b *testing.B) {
	for _, loop := range readLoops {
		b.Run(loop, func(b *testing.B) { benchIdle(b, loop, rawDialLC) })
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
