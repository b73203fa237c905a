// Command scansim serves a simulator of the original service's scan endpoint (package
// loadtest/scansim) until SIGINT or SIGTERM, for the README's pull step and the million-row
// runs; with --write-jsonl it writes the same rows as a JSON-lines export file and exits.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pushd/pushd/loadtest/scansim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "scansim:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:8095", "listen address (not 8090: the own channel's gateway port)")
	var cfg scansim.Config
	flag.StringVar(&cfg.AppID, "app-id", "", "app id the simulator answers for (X-LC-Id); required")
	flag.IntVar(&cfg.Rows, "rows", 1000, "installations served")
	flag.IntVar(&cfg.BadEvery, "bad-every", 0, "make every Nth row invalid (0: none)")
	flag.IntVar(&cfg.Throttle, "throttle", 0, "answer every Nth request 429 with Retry-After: 1 (0: never)")
	cutAt := flag.String("cut-at", "", "comma-separated request numbers whose reply is cut mid-body")
	jsonl := flag.String("write-jsonl", "", "write the rows as JSON lines to this file and exit")
	flag.Parse()
	// Rows updated in the last month: older ones would be past pushd's 90-day inactivity
	// sweep by the time anyone looks at them.
	cfg.Base = time.Now().UTC().Add(-30 * 24 * time.Hour).Truncate(time.Hour)
	cfg.MasterKey = os.Getenv("SCANSIM_MASTER_KEY")
	if *jsonl != "" {
		return writeJSONL(*jsonl, &cfg)
	}
	if cfg.AppID == "" || cfg.MasterKey == "" {
		return fmt.Errorf("--app-id and SCANSIM_MASTER_KEY in the environment are required")
	}
	for _, f := range strings.Split(*cutAt, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("--cut-at %q: %w", f, err)
		}
		cfg.CutAt = append(cfg.CutAt, n)
	}
	s, err := scansim.Start(*addr, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("scan simulator for app %s: %d rows at %s\n", cfg.AppID, cfg.Rows, s.URL())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return s.Close()
}

func writeJSONL(path string, cfg *scansim.Config) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for i := 0; i < cfg.Rows; i++ {
		if err := enc.Encode(scansim.RowAt(cfg, i, cfg.Base, false)); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
