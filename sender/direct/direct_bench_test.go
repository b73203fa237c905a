package direct_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/pushd/pushd/bench/procstat"
	"github.com/pushd/pushd/internal/waitfor"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/sender/direct"
)

// seedDevices stores n own-channel installations dev0..dev<n-1> in one bulk write.
func (r *rig) seedDevices(b testing.TB, n int) {
	now := time.Now().UnixMilli()
	insts := make([]push.Installation, n)
	for i := range insts {
		iid := "dev" + strconv.Itoa(i)
		insts[i] = push.Installation{
			Route:     push.Route{ObjectID: "o-" + iid, DeviceType: push.DeviceAndroid, InstallationID: iid, UpdatedAt: now},
			CreatedAt: now,
			Doc:       []byte(`{"deviceType":"android","installationId":"` + iid + `"}`),
		}
	}
	if err := r.st.SeedInstallations(testApp, push.DefaultBuckets, insts); err != nil {
		b.Fatal(err)
	}
}

// rawDial connects like a device without a client library: the upgrade request by hand, the
// hello read, then nothing (no goroutine, no buffer), so what an idle connection costs is the
// server's.
func rawDial(b testing.TB, addr, iid string) net.Conn {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /1.1/connect?v=1&installationId=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nX-SVC-Id: %s\r\nX-SVC-Key: %s\r\n\r\n", iid, addr, testApp, testKey)
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
	h, err := ws.ReadHeader(br)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, h.Length)
	if _, err := io.ReadFull(br, payload); err != nil || !strings.Contains(string(payload), `"hello"`) {
		b.Fatalf("hello of %s: %q %v", iid, payload, err)
	}
	return conn
}

// memInUse is the Go heap and stacks in use after a collection.
func memInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse + ms.StackInuse
}

// rss is the process's resident set in bytes (Linux), 0 elsewhere.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// BenchmarkDirectIdleConnection reports what one idle device connection costs the gateway
// with each read loop (sub-benchmarks epoll and goroutine): Go heap+stack and RSS per
// connection, with 2,000 connections open (PUSHD_BENCH_DIRECT_CONNS sets another count). The
// client side holds only its socket. RSS is measured on the first round (later ones reuse the
// memory the first freed), and only indicates: the devices' sockets are in the same process,
// and a sub-benchmark reuses what an earlier one freed. The figure to quote, with the gateway
// and the devices in separate processes and up to 100,000 devices, is
// bench.BenchmarkGatewayIdle's.
func BenchmarkDirectIdleConnection(b *testing.B) {
	for _, loop := range readLoops {
		b.Run(loop, func(b *testing.B) { benchIdle(b, loop, rawDial) })
	}
}

// benchIdle measures idle connections read by loop, dialled by dial.
func benchIdle(b *testing.B, loop string, dial func(testing.TB, string, string) net.Conn) {
	conns := 2000
	if v, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_DIRECT_CONNS")); err == nil && v > 0 {
		conns = v // both ends are in this process: at most half the open-file limit
	}
	r := newRig(b, direct.Config{ConnectRate: 1e6, ReadLoop: loop})
	r.seedDevices(b, conns)
	b.ReportAllocs()
	firstRSS := -1.0 // RSS grows on the first round only: later ones reuse what it freed
	for b.Loop() {
		memBefore, rssBefore := memInUse(), rss()
		open := make([]net.Conn, 0, conns)
		for i := range conns {
			open = append(open, dial(b, r.srv.Addr().String(), "dev"+strconv.Itoa(i)))
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

// BenchmarkDirectDeliverOnline: messages consumed from push.direct for 1,000 connected
// devices by 16 partition consumers at once (as the gateway runs them), each message cached (a
// store write, synced; concurrent syncs share one fsync) and written; the devices read and ack
// in the same process. Reports deliveries/s and this process's CPU per delivery (devices and
// their acks included), with each read loop reading the acks.
func BenchmarkDirectDeliverOnline(b *testing.B) {
	for _, loop := range readLoops {
		b.Run(loop, func(b *testing.B) { benchDeliverOnline(b, loop) })
	}
}

// benchDeliverOnline is BenchmarkDirectDeliverOnline with the acks read by loop.
func benchDeliverOnline(b *testing.B, loop string) {
	const (
		devices    = 1000
		partitions = 16
	)
	r := newRig(b, direct.Config{ConnectRate: 1e6, ReadLoop: loop})
	r.seedDevices(b, devices)
	conns := make([]net.Conn, devices)
	for i := range conns {
		conns[i] = rawDial(b, r.srv.Addr().String(), "dev"+strconv.Itoa(i))
	}
	var received atomic.Int64
	for _, c := range conns {
		go func(c net.Conn) {
			for {
				h, err := ws.ReadHeader(c)
				if err != nil {
					return
				}
				p := make([]byte, h.Length)
				if _, err := io.ReadFull(c, p); err != nil {
					return
				}
				var f struct{ ID string }
				_ = json.Unmarshal(p, &f)
				ack := []byte(`{"op":"ack","ids":["` + f.ID + `"]}`)
				_ = ws.WriteFrame(c, ws.MaskFrame(ws.NewTextFrame(ack)))
				received.Add(1)
			}
		}(c)
	}
	b.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})
	ctx := context.Background()
	// One push record per 1,000 messages (one per device), created before the clock starts.
	n := b.N
	for k := 0; k*devices < n; k++ {
		now := time.Now().UTC()
		rec := push.Notification{ObjectID: "m" + strconv.Itoa(k), AppID: testApp, NotificationID: "nid", JobID: "j", Status: push.StatusInProcess, CreatedAt: now, UpdatedAt: now, Kind: push.JobQuery, Prod: "prod"}
		if err := r.st.CreateNotificationNoSync(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start, cpu := time.Now(), procstat.CPU(b)
	var wg sync.WaitGroup
	for p := range partitions {
		wg.Go(func() {
			for i := p; i < n; i += partitions {
				v, _ := json.Marshal(push.DirectMessage{AppID: testApp, InstallationID: "dev" + strconv.Itoa(i%devices),
					ID: "m" + strconv.Itoa(i/devices), NotificationID: "nid", Data: json.RawMessage(`{"alert":"hi"}`)})
				if err := r.core.Handle(ctx, queue.Message{Topic: queue.TopicDirect, Partition: p, Value: v}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitfor.True(b, time.Minute, "every message received", func() bool { return received.Load() >= int64(n) })
	b.StopTimer()
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "deliveries/s")
	b.ReportMetric(float64((procstat.CPU(b)-cpu).Microseconds())/float64(n), "CPU-µs/delivery")
}
