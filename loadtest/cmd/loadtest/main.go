// Command loadtest drives a running pushd against the gateway simulators (pushsim) and proves
// delivery per target; scripts/loadtest.sh starts both and runs it (`make loadtest`).
// It prints a table, writes a JSON report with -report and an HTML one with -html, and exits 1 when a verification
// fails, 2 when the run could not complete. `loadtest -h` lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pushd/pushd/internal/progress"
	"github.com/pushd/pushd/loadtest/driver"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	var cfg driver.Config
	var pushes, sims, report, html string
	cfg.RegisterFlags(fs, &pushes, &sims)
	fs.StringVar(&report, "report", "", "write the JSON report to this file")
	fs.StringVar(&html, "html", "", "write the self-contained HTML report (plots, tables, the JSON) to this file")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = os.Getenv("PUSHD_ADMIN_TOKEN")
	}
	var err error
	if cfg.Sims, err = driver.ParseSims(sims); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 2
	}
	if cfg.LatencyCompare > 0 && pushes == "" {
		pushes = driver.ScenarioAll // the comparison's push, alone unless -pushes says more
	}
	if cfg.Pushes, err = driver.ParsePushes(pushes, cfg.SimInvalidRate, cfg.KillAt); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		return 2
	}
	if progress.IsTerminal(os.Stderr) {
		cfg.Terminal = os.Stderr // the seeding's progress bar; plain lines in the output otherwise
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := driver.Run(ctx, cfg, os.Stdout)
	if err := rep.WriteTable(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
	}
	if report != "" {
		if err := rep.WriteJSONFile(report); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			return 2
		}
		fmt.Fprintln(os.Stdout, "report written to", report)
	}
	if html != "" {
		if err := rep.WriteHTMLFile(html); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
			return 2
		}
		fmt.Fprintln(os.Stdout, "HTML report written to", html)
	}
	switch {
	case runErr != nil:
		fmt.Fprintln(os.Stderr, "loadtest:", runErr)
		return 2
	case !rep.OK:
		return 1
	}
	return 0
}
