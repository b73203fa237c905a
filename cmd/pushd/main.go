// Command pushd is the push service: one binary running any set of roles (api, fanout,
// scheduler, gateway) over the embedded or the cluster store and log.
//
//	pushd serve [flags]                 run the roles (see pushd serve -h)
//	pushd app create --name N [--json]  create an app in the data directory's store
//	pushd import --app ID (--from URL | FILE)  pull or load installations (server stopped)
//	pushd export --app ID [--out FILE]  write an app's installations as JSON lines
//
// main holds no logic: it reads the configuration, builds the parts, runs them as an
// ordered service group and stops them in reverse on SIGINT/SIGTERM.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/pushd/pushd/internal/progress"
)

func main() {
	if len(os.Args) > 1 { // serve and import start again once, with huge pages (hugepages.go)
		execWithHugePages(os.Args[1])
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "pushd: %v\n", err)
		}
		os.Exit(1)
	}
}

const usage = `usage:
  pushd serve [flags]                       run the service (pushd serve -h lists flags; each
                                            flag --x-y can also be set as PUSHD_X_Y)
  pushd app create --name NAME [--json]     create an app in the data directory's store
  pushd import --app ID --from URL          pull installations from the original service's
                                            scan endpoint (master key: PUSHD_IMPORT_MASTER_KEY
                                            or a prompt); resumable; --since for later pulls
  pushd import --app ID FILE                load a JSON export, Parse export, JSON lines or
                                            _Installation.bson (pushd serve must be stopped)
  pushd export --app ID [--out FILE]        write the app's installations as JSON lines
`

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, hooks *testHooks) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr, hooks)
	case "app":
		if len(args) < 2 || args[1] != "create" {
			fmt.Fprint(stderr, usage)
			return errors.New("unknown app command: want app create")
		}
		return appCreate(ctx, args[2:], stdout, stderr)
	case "import", "export":
		cio := importIO{stdin: os.Stdin, stdout: stdout, stderr: stderr}
		if f, ok := stderr.(*os.File); ok {
			cio.stderrTerminal = progress.IsTerminal(f)
		}
		if hooks != nil {
			cio.readKey = hooks.readKey
		}
		if args[0] == "import" {
			return importCmd(ctx, args[1:], cio)
		}
		return exportCmd(ctx, args[1:], cio)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// parseHelpAware runs parse with fs's messages held back. Help asked for (-h, --help) is not an
// error: the usage goes to stdout and ok is false with a nil error, so the command ends with
// status 0. On a parse error the message and usage go to stderr.
func parseHelpAware(fs *flag.FlagSet, stdout, stderr io.Writer, parse func() error) (ok bool, err error) {
	var msg bytes.Buffer
	fs.SetOutput(&msg)
	err = parse()
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, werr := stdout.Write(msg.Bytes())
		return false, werr
	}
	_, _ = stderr.Write(msg.Bytes())
	return err == nil, err
}

// testHooks let tests observe a running serve. nil in production.
type testHooks struct {
	ready    func(addr string) // called once the API listens
	opsReady func(addr string) // called once the ops endpoints listen
	// gatewayReady is called once the gateway role's device endpoint listens.
	gatewayReady func(addr string)
	// opsEndDrain, when closed, ends the ops server's --drain-delay early.
	opsEndDrain <-chan struct{}
	// readKey, if set, stands for the terminal prompt of pushd import's master key.
	readKey func() (string, error)
}
