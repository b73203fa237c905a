// Command pushsim runs the APNs and FCM gateway simulators (package loadtest/sim) until
// SIGINT or SIGTERM, for `make run` and the load test. `pushsim -h` lists the flags.
// `pushsim device` runs a simulated own-channel Android device instead (`pushsim device -h`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/pushd/pushd/loadtest/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := sim.RunCLI(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushsim:", err)
		os.Exit(1)
	}
}
