// Command webhooksink receives pushd's delivery-event webhooks for the load test: it
// verifies each request's signature with -secret, de-duplicates events by id and keeps a
// per-device ledger (GET /_ledger); POST /_fail?n=N makes it answer 500 to the next N
// requests. It prints one line, "webhooksink: http://<addr>", once it listens.
//
//	webhooksink -addr 127.0.0.1:0 -secret "$SECRET"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pushd/pushd/loadtest/webhooksink"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhooksink:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("webhooksink", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	secret := fs.String("secret", "", "the app's webhook secret (required)")
	tolerance := fs.Duration("tolerance", 5*time.Minute, "largest age of a signature's timestamp (0: any)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("-secret is required")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", *addr, err)
	}
	sink := webhooksink.New(*secret)
	sink.Tolerance = *tolerance
	srv := &http.Server{Handler: sink.Mux(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "webhooksink: http://%s\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
