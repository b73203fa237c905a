package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/direct"
	pstore "github.com/pushd/pushd/store/pebble"
)

// BenchmarkGatewayIdle: what an idle device connection costs the gateway, in RSS and Go
// heap+stack, with PUSHD_BENCH_GATEWAY_CONNS devices connected (default 10,000; issue 13's
// figure is 100,000), for both protocols (ours, the original's lc) and both read loops.
//
// The gateway is the real one: sender/direct's Server and Core over a Pebble store seeded
// with the devices' installations, in a child process of its own (this test binary again, see
// TestGatewayIdleChild), so that its RSS is the gateway's alone. The devices are child
// processes too, each dialling from its own source address 127.0.0.2, .3, … (one address has
// ~28,000 ephemeral ports), holding their sockets and nothing else.
//
// A process holds at most its open-file limit of sockets. The benchmark raises its soft limit
// to the hard one (the children inherit it) and gives each process up to that limit less a
// margin (PUSHD_BENCH_GATEWAY_PER_PROC overrides it). Where the limit allows 100,000, one
// gateway process holds them all; where it does not (a hard limit of 20,000: 19,000 each),
// several gateway processes share the devices, and the figures are per process and in
// total. Reported: RSS-B/conn (all gateway processes' RSS growth over all connections, after
// a GC that returns freed memory to the OS), RSS-max-B/conn (the worst process),
// heap+stack-B/conn, and conns/gateway.
func BenchmarkGatewayIdle(b *testing.B) {
	limit := raiseNoFile(b)
	total := envInt("PUSHD_BENCH_GATEWAY_CONNS", 10_000)
	perProc := envInt("PUSHD_BENCH_GATEWAY_PER_PROC", int(limit)-1000)
	if perProc < 1 {
		b.Fatalf("open-file limit %d leaves no room for connections", limit)
	}
	gateways := (total + perProc - 1) / perProc
	b.Logf("%d connections: %d gateway process(es) of up to %d (open-file limit %d)", total, gateways, perProc, limit)
	for _, proto := range []string{"ours", "lc"} {
		for _, loop := range []string{direct.ReadLoopEpoll, direct.ReadLoopGoroutine} {
			b.Run(proto+"/"+loop, func(b *testing.B) {
				for b.Loop() {
					runGatewayIdle(b, proto, loop, total, gateways)
				}
			})
		}
	}
}

// raiseNoFile sets the soft open-file limit to the hard one and returns it.
func raiseNoFile(b *testing.B) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Fatal(err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			b.Fatalf("cannot raise the open-file limit to %d: %v", lim.Max, err)
		}
	}
	return lim.Cur
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// child is a child process of the benchmark, spoken to by lines on stdin and stdout.
type child struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	lines chan string
}

func startChild(b *testing.B, env ...string) *child {
	cmd := exec.Command(os.Args[0], "-test.run=^TestGatewayIdleChild$", "-test.bench=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewScanner(out), lines: make(chan string, 4)}
	go func() {
		defer close(c.lines)
		for c.out.Scan() {
			if l := c.out.Text(); strings.HasPrefix(l, "gwbench ") {
				c.lines <- strings.TrimPrefix(l, "gwbench ")
			}
		}
	}()
	b.Cleanup(func() {
		_ = c.in.Close()
		_ = c.cmd.Wait()
	})
	return c
}

// expect is the child's next line, which must start with word; its other fields.
func (c *child) expect(b *testing.B, word string, timeout time.Duration) []string {
	select {
	case l, ok := <-c.lines:
		f := strings.Fields(l)
		if !ok || len(f) == 0 || f[0] != word {
			b.Fatalf("child %d: got %q (open %v), want %s", c.cmd.Process.Pid, l, ok, word)
		}
		return f[1:]
	case <-time.After(timeout):
		b.Fatalf("child %d: no %s within %s", c.cmd.Process.Pid, word, timeout)
	}
	return nil
}

// srcAddrs counts the device processes' source addresses used so far (127.0.0.2, …).
var srcAddrs int

// runGatewayIdle runs one round: gateways, devices, measure, stop.
func runGatewayIdle(b *testing.B, proto, loop string, total, gateways int) {
	per := (total + gateways - 1) / gateways
	gws := make([]*child, 0, gateways)
	counts := make([]int, 0, gateways)
	for g := range gateways {
		n := min(per, total-g*per)
		counts = append(counts, n)
		gws = append(gws, startChild(b, "PUSHD_BENCH_GW_CHILD=gateway", "PUSHD_BENCH_GW_DEVICES="+strconv.Itoa(n), "PUSHD_BENCH_GW_LOOP="+loop))
	}
	addrs := make([]string, gateways)
	for g, c := range gws {
		addrs[g] = c.expect(b, "ready", 5*time.Minute)[0]
	}
	// One device process per gateway, each from its own source address, never one an earlier
	// round used: its ports are still in TIME-WAIT, and binding past them costs the kernel
	// more than the dial.
	devs := make([]*child, gateways)
	for g := range gateways {
		k := srcAddrs
		srcAddrs++
		src := fmt.Sprintf("127.0.%d.%d", k/250, 2+k%250)
		devs[g] = startChild(b, "PUSHD_BENCH_GW_CHILD=devices", "PUSHD_BENCH_GW_DEVICES="+strconv.Itoa(counts[g]),
			"PUSHD_BENCH_GW_ADDR="+addrs[g], "PUSHD_BENCH_GW_SRC="+src, "PUSHD_BENCH_GW_PROTO="+proto)
	}
	for _, d := range devs {
		d.expect(b, "dialed", 10*time.Minute)
	}
	var rssSum, memSum, worst float64
	for g, c := range gws {
		if _, err := fmt.Fprintf(c.in, "measure %d\n", counts[g]); err != nil {
			b.Fatal(err)
		}
		f := c.expect(b, "measured", 5*time.Minute)
		rss, _ := strconv.ParseFloat(f[0], 64)
		mem, _ := strconv.ParseFloat(f[1], 64)
		b.Logf("%s/%s gateway %d: %d connections, %.0f B RSS and %.0f B heap+stack per connection", proto, loop, g, counts[g], rss/float64(counts[g]), mem/float64(counts[g]))
		rssSum += rss
		memSum += mem
		worst = max(worst, rss/float64(counts[g]))
	}
	b.ReportMetric(rssSum/float64(total), "RSS-B/conn")
	b.ReportMetric(worst, "RSS-max-B/conn")
	b.ReportMetric(memSum/float64(total), "heap+stack-B/conn")
	b.ReportMetric(float64(per), "conns/gateway")
	for _, c := range append(devs, gws...) {
		_ = c.in.Close()
	}
	for _, c := range append(devs, gws...) {
		if err := c.cmd.Wait(); err != nil {
			b.Errorf("child %d: %v", c.cmd.Process.Pid, err)
		}
	}
}

// TestGatewayIdleChild is a child process of BenchmarkGatewayIdle (PUSHD_BENCH_GW_CHILD
// set); skipped otherwise.
func TestGatewayIdleChild(t *testing.T) {
	switch os.Getenv("PUSHD_BENCH_GW_CHILD") {
	case "gateway":
		gatewayChild(t)
	case "devices":
		devicesChild(t)
	default:
		t.Skip("a child process of BenchmarkGatewayIdle")
	}
}

const (
	gwApp = "gwbenchapp"
	gwKey = "gwbenchkey"
)

// gatewayChild serves device connections with the real gateway over a seeded store, says
// "ready <addr>", and on "measure <n>" (once n devices are attached) "measured <RSS growth>
// <heap+stack growth>" in bytes; it stops when stdin closes.
func gatewayChild(t *testing.T) {
	n := envInt("PUSHD_BENCH_GW_DEVICES", 1)
	st, err := pstore.Open(t.TempDir(), pstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	now := time.Now()
	app := push.App{ID: gwApp, Name: "gwbench", AppKey: gwKey, MasterKey: "master", Settings: push.DefaultSettings(), CreatedAt: now, UpdatedAt: now}
	if err := st.CreateApp(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	insts := make([]push.Installation, n)
	for i := range insts {
		iid := "dev" + strconv.Itoa(i)
		insts[i] = push.Installation{
			Route:     push.Route{ObjectID: "o-" + iid, DeviceType: push.DeviceAndroid, InstallationID: iid, UpdatedAt: now.UnixMilli()},
			CreatedAt: now.UnixMilli(),
			Doc:       []byte(`{"deviceType":"android","installationId":"` + iid + `"}`),
		}
	}
	if err := st.SeedInstallations(gwApp, push.DefaultBuckets, insts); err != nil {
		t.Fatal(err)
	}
	insts = nil
	// Heartbeats far apart: the devices are idle for the whole measurement.
	cfg := direct.Config{Addr: "127.0.0.1:0", ConnectRate: 1e9, Heartbeat: time.Hour, LCIdle: time.Hour, ReadLoop: os.Getenv("PUSHD_BENCH_GW_LOOP")}
	set := metrics.NewSet()
	core := direct.NewCore(cfg, st, zap.NewNop(), set)
	srv := direct.NewServer(cfg, core, st, st, zap.NewNop(), set)
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	rss0, mem0 := settledMem()
	fmt.Printf("gwbench ready %s\n", srv.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var want int
		if _, err := fmt.Sscanf(in.Text(), "measure %d", &want); err != nil {
			t.Fatalf("unknown command %q", in.Text())
		}
		waitfor.True(t, 5*time.Minute, "every device attached", func() bool { return core.Connected() == want })
		rss, mem := settledMem()
		fmt.Printf("gwbench measured %d %d\n", int64(rss)-int64(rss0), int64(mem)-int64(mem0))
	}
}

// settledMem is the process's RSS and Go heap+stack in use after a collection that returns
// freed memory to the OS (what a long-running gateway's scavenger does over time).
func settledMem() (rss, mem uint64) {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, err := os.ReadFile("/proc/self/statm")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return rss, ms.HeapInuse + ms.StackInuse
}

// devicesChild dials PUSHD_BENCH_GW_DEVICES devices dev0… to the gateway from the source
// address, each connected and then idle (nothing read, no goroutine), says "dialed <n>", and
// holds them until stdin closes.
func devicesChild(t *testing.T) {
	n := envInt("PUSHD_BENCH_GW_DEVICES", 1)
	addr, proto := os.Getenv("PUSHD_BENCH_GW_ADDR"), os.Getenv("PUSHD_BENCH_GW_PROTO")
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(os.Getenv("PUSHD_BENCH_GW_SRC"))}, Timeout: time.Minute, KeepAlive: -1}
	conns := make([]net.Conn, n)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next { // after an error, drain without dialling
				mu.Lock()
				failed := firstErr != nil
				mu.Unlock()
				if failed {
					continue
				}
				c, err := dialDevice(dialer, addr, proto, "dev"+strconv.Itoa(i))
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				conns[i] = c
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	fmt.Printf("gwbench dialed %d\n", n)
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}

// dialDevice connects one device as a client library would, without keeping one: the
// upgrade by hand, the hello (ours) or the login and loggedin (lc), then nothing.
func dialDevice(d *net.Dialer, addr, proto, iid string) (net.Conn, error) {
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot dial device %s: %w", iid, err)
	}
	if proto == "lc" {
		fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n\r\n", addr, direct.SubProtocolLC21)
	} else {
		fmt.Fprintf(conn, "GET /1.1/connect?v=1&installationId=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-SVC-Id: %s\r\nX-SVC-Key: %s\r\n\r\n", iid, addr, gwApp, gwKey)
	}
	br := bufio.NewReaderSize(conn, 512)
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, "101") {
		_ = conn.Close()
		return nil, fmt.Errorf("cannot upgrade device %s: %q %w", iid, status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("cannot upgrade device %s: %w", iid, err)
		}
		if line == "\r\n" {
			break
		}
	}
	if proto == "lc" {
		if err := ws.WriteFrame(conn, ws.MaskFrame(ws.NewBinaryFrame(sim.LoginCommand(gwApp, iid)))); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("cannot log device %s in: %w", iid, err)
		}
	}
	h, err := ws.ReadHeader(br)
	if err == nil && h.OpCode == ws.OpClose {
		err = errors.New("closed by the gateway")
	}
	if err == nil {
		_, err = io.CopyN(io.Discard, br, h.Length)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cannot read the first frame of device %s: %w", iid, err)
	}
	return conn, nil
}
