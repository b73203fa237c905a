package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/store"
	pstore "github.com/pushd/pushd/store/pebble"
)

// The population: PUSHD_BENCH_N installations (default 1,000,000, the issue's `make bench`
// size; PUSHD_BENCH_N=200000 for a quick run) of one app with 256 buckets, ~300-byte documents, half iOS,
// channels news (1/3), sports (1/5), plus "all". Seeded once per process through the store's
// bulk loader and compacted, so every benchmark reads the same settled rows.

const (
	benchApp     = "benchapp"
	benchBuckets = 256
)

func benchN() int {
	if v, err := strconv.Atoi(os.Getenv("PUSHD_BENCH_N")); err == nil && v > 0 {
		return v
	}
	return 1_000_000
}

// benchCacheMB is the Pebble block cache (PUSHD_BENCH_CACHE_MB, default 1024 MiB): a million
// installations' by_bucket rows (~500 MB decompressed) stay resident, so the scan benchmarks
// measure the CPU cost of scanning and filtering, as store/pebble's do. With 256 a scan also
// pays block decompression and the raw and filtered rates both drop by about half.
func benchCacheMB() int64 {
	if v, err := strconv.ParseInt(os.Getenv("PUSHD_BENCH_CACHE_MB"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 1024
}

func benchInst(i int, now time.Time) push.Installation {
	r := push.Route{ObjectID: fmt.Sprintf("obj%08d", i), UpdatedAt: now.UnixMilli(), Channels: []string{"all"}}
	if i%2 == 0 {
		r.DeviceType, r.DeviceToken, r.APNsTopic = push.DeviceIOS, strings.Repeat(fmt.Sprintf("%08x", i), 8), "com.example.app"
	} else {
		r.DeviceType, r.InstallationID = push.DeviceAndroid, fmt.Sprintf("iid-%08d-0000-4000-8000-000000000000", i)
	}
	if i%3 == 0 {
		r.Channels = append(r.Channels, "news")
	}
	if i%5 == 0 {
		r.Channels = append(r.Channels, "sports")
	}
	if i%7 == 0 {
		r.DeviceProfile = "beta"
	}
	chans, _ := json.Marshal(r.Channels)
	// The document carries the routing fields the route has, as the API writes them (a device
	// id a device does not have is absent, not "").
	ids := fmt.Sprintf(`"installationId":%q`, r.InstallationID)
	if r.DeviceType == push.DeviceIOS {
		ids = fmt.Sprintf(`"deviceToken":%q,"apnsTopic":%q`, r.DeviceToken, r.APNsTopic)
	}
	if r.DeviceProfile != "" {
		ids += fmt.Sprintf(`,"deviceProfile":%q`, r.DeviceProfile)
	}
	doc := fmt.Sprintf(`{"objectId":%q,"deviceType":%q,%s,`+
		`"channels":%s,"timeZone":"Asia/Shanghai","badge":0,"appVersion":"3.%d.1",`+
		`"createdAt":"2024-05-01T10:00:00.000Z","updatedAt":%q,"user":"u%d"}`,
		r.ObjectID, r.DeviceType, ids, chans, i%20, now.UTC().Format("2006-01-02T15:04:05.000Z"), i)
	return push.Installation{Route: r, CreatedAt: now.UnixMilli(), Doc: []byte(doc)}
}

var seeded struct {
	once sync.Once
	dir  string
	st   *pstore.Store
	lg   *embedded.Log
	n    int
	err  error
}

func seededStore(b *testing.B) (*pstore.Store, *embedded.Log, int) {
	seeded.once.Do(func() {
		seeded.n = benchN()
		seeded.dir, seeded.err = os.MkdirTemp("", "pushd-fanout-bench-")
		if seeded.err != nil {
			return
		}
		seeded.st, seeded.err = pstore.Open(seeded.dir, pstore.Options{CacheSize: benchCacheMB() << 20})
		if seeded.err != nil {
			return
		}
		s := push.DefaultSettings()
		s.Buckets, s.DailyVolume = benchBuckets, 0
		if seeded.err = seeded.st.CreateApp(context.Background(), push.App{ID: benchApp, Settings: s}); seeded.err != nil {
			return
		}
		now := time.Now()
		chunk := make([]push.Installation, 0, 50_000)
		for i := 0; i < seeded.n; i++ {
			chunk = append(chunk, benchInst(i, now))
			if len(chunk) == cap(chunk) || i == seeded.n-1 {
				if seeded.err = seeded.st.SeedInstallations(benchApp, benchBuckets, chunk); seeded.err != nil {
					return
				}
				chunk = chunk[:0]
			}
		}
		if seeded.err = seeded.st.DB().Compact(context.Background(), []byte{0}, []byte{0xFF}, true); seeded.err != nil {
			return
		}
		seeded.lg, seeded.err = embedded.Open(seeded.st.DB(), embedded.Options{TrimInterval: -1})
	})
	if seeded.err != nil {
		b.Fatal(seeded.err)
	}
	return seeded.st, seeded.lg, seeded.n
}

func TestMain(m *testing.M) {
	code := m.Run()
	if seeded.st != nil {
		_ = seeded.lg.Close()
		_ = seeded.st.Close()
	}
	if seeded.dir != "" {
		_ = os.RemoveAll(seeded.dir)
	}
	os.Exit(code)
}

// parallel runs fn over the app's buckets split between GOMAXPROCS goroutines.
func parallel(b *testing.B, fn func(lo, hi int) (int64, error)) int64 {
	procs := runtime.GOMAXPROCS(0)
	var total atomic.Int64
	var g errgroup.Group
	per := benchBuckets / procs
	for p := 0; p < procs; p++ {
		lo, hi := p*per, (p+1)*per
		if p == procs-1 {
			hi = benchBuckets
		}
		g.Go(func() error {
			n, err := fn(lo, hi)
			total.Add(n)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return total.Load()
}

func reportRows(b *testing.B, rows int64) {
	rate := float64(rows) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "rows/s")
	b.ReportMetric(rate/float64(runtime.GOMAXPROCS(0)), "rows/s/core")
}

// BenchmarkScanRaw is the ceiling: bare Pebble iteration over the app's by_bucket rows (the
// key layout of store/pebble: 'b', app, bucket), one iterator per bucket, on every core.
func BenchmarkScanRaw(b *testing.B) {
	st, _, n := seededStore(b)
	b.ReportAllocs()
	b.ResetTimer()
	var rows int64
	for b.Loop() {
		rows += parallel(b, func(lo, hi int) (int64, error) {
			var rows int64
			for bk := lo; bk < hi; bk++ {
				prefix := store.AppendKeyUint16(store.AppendKeyString([]byte{'b'}, benchApp), uint16(bk))
				upper := append(append([]byte(nil), prefix...), 0xFF, 0xFF, 0xFF, 0xFF)
				it, err := st.DB().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
				if err != nil {
					return rows, err
				}
				for valid := it.First(); valid; valid = it.Next() {
					if _, err := it.ValueAndErr(); err != nil {
						_ = it.Close()
						return rows, err
					}
					rows++
				}
				if err := it.Close(); err != nil {
					return rows, err
				}
			}
			return rows, nil
		})
	}
	if rows != int64(b.N)*int64(n) {
		b.Fatalf("scanned %d rows, want %d", rows, int64(b.N)*int64(n))
	}
	reportRows(b, rows)
}

// BenchmarkScanFilter is a worker's scan and residual filter (fanout.Count runs the same
// code): rows read, decoded and filtered per second, on every core. "route" is a 3-condition
// where answered from the compact route; "doc" adds a field only the JSON document has.
func BenchmarkScanFilter(b *testing.B) {
	for _, c := range []struct{ name, where string }{
		{"route", `{"deviceToken":{"$exists":true},"channels":"sports","deviceProfile":{"$ne":"beta"}}`},
		{"doc", `{"deviceToken":{"$exists":true},"channels":"sports","appVersion":{"$gte":"3.10"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, _, n := seededStore(b)
			q, err := query.Parse(json.RawMessage(c.where))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			now := time.Now()
			var matched atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var rows int64
			for b.Loop() {
				// The channel hint is not used: every row of the app is read and filtered.
				rows += parallel(b, func(lo, hi int) (int64, error) {
					r, m, err := fanout.Count(ctx, st, benchApp, "", lo, hi, q, now)
					matched.Add(m)
					return r, err
				})
			}
			if rows != int64(b.N)*int64(n) || matched.Load() == 0 {
				b.Fatalf("scanned %d rows (%d matched), want %d", rows, matched.Load(), int64(b.N)*int64(n))
			}
			reportRows(b, rows)
			b.ReportMetric(float64(matched.Load())/float64(b.N), "matched/op")
		})
	}
}

// noopSender answers every delivery sent.
type noopSender struct{ n atomic.Int64 }

func (s *noopSender) Send(_ context.Context, ds []push.Delivery, res []push.Result) error {
	for i := range res {
		res[i] = push.Result{Outcome: push.OutcomeSent}
	}
	s.n.Add(int64(len(ds)))
	return nil
}

// BenchmarkPipelineNoop is a whole push through the embedded log, the planner and a worker
// to a sender that does nothing: deliveries per second, and the growth of the process's RSS
// across the run, peak VmRSS over the baseline taken after a warm-up scan (bounded memory: it
// must not depend on the audience; PUSHD_BENCH_N=1000000 must stay under 200 MB).
//
// allocs/target is every allocation of the process during the pushes (the benchmark's own
// record polling and RSS sampling included) over the targets sent. The sub-benchmarks run
// the worker with batches of 100 (the default) and 1000 targets: scan → filter → render →
// send allocates per batch (the batch's string arena, the checkpoint, the sender call), not per
// target, so allocs/target falls with the batch size (issue 16 item 3).
func BenchmarkPipelineNoop(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) { benchPipelineNoop(b, size) })
	}
}

func benchPipelineNoop(b *testing.B, batchSize int) {
	st, lg, n := seededStore(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	pl, err := fanout.NewPlanner(fanout.DefaultPlannerConfig(), st, lg, zap.NewNop(), metrics.NewSet())
	if err != nil {
		b.Fatal(err)
	}
	snd := &noopSender{}
	wcfg := fanout.DefaultWorkerConfig()
	wcfg.BatchSize = batchSize
	w, err := fanout.NewWorker(wcfg, st, lg, snd, zap.NewNop(), metrics.NewSet())
	if err != nil {
		b.Fatal(err)
	}
	g.Go(func() error { return pl.Run(gctx) })
	g.Go(func() error { return w.Run(gctx) })

	// Warm the block cache first: its growth is bounded by its configured size, whatever the
	// audience, and is not what this measures.
	if _, _, err := fanout.Count(ctx, st, benchApp, "", 0, benchBuckets, mustParse(b, `{}`), time.Now()); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	rss0 := rssBytes(b)
	var peak int64
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	var targets int64
	i := 0
	for b.Loop() {
		i++
		job := push.Job{ID: fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i), AppID: benchApp, Kind: push.JobQuery,
			Data: json.RawMessage(`{"alert":"hello","badge":1}`), Prod: "prod", CreatedAt: time.Now()}
		job.NotificationObjectID = "n-" + job.ID
		rec := push.Notification{ObjectID: job.NotificationObjectID, AppID: benchApp, JobID: job.ID, Status: push.StatusInQueue, CreatedAt: job.CreatedAt}
		if err := st.CreateNotification(ctx, rec); err != nil {
			b.Fatal(err)
		}
		v, _ := json.Marshal(job)
		if err := lg.Append(ctx, queue.TopicJobs, queue.Record{Partition: 0, Key: []byte(benchApp), Value: v}); err != nil {
			b.Fatal(err)
		}
		for {
			r, err := st.GetNotification(ctx, benchApp, job.NotificationObjectID)
			if err != nil {
				b.Fatal(err)
			}
			if r.Status == push.StatusDone {
				targets += r.Counts.Total().Sent
				break
			}
			if rss := rssBytes(b); rss > peak {
				peak = rss
			}
			time.Sleep(2 * time.Millisecond) // polling the record: a benchmark, not a test
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	if targets != int64(b.N)*int64(n) || snd.n.Load() != targets {
		b.Fatalf("%d targets counted, %d sent, want %d", targets, snd.n.Load(), int64(b.N)*int64(n))
	}
	b.ReportMetric(float64(targets)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(max(peak-rss0, 0))/(1<<20), "rss-growth-MB")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(targets), "allocs/target")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(targets), "B/target")
	cancel()
	_ = g.Wait()
}

func mustParse(b *testing.B, where string) *query.Query {
	q, err := query.Parse(json.RawMessage(where))
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// rssBytes reads VmRSS from /proc/self/status.
func rssBytes(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
