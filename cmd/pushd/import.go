package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/internal/faultpoint"
	"github.com/pushd/pushd/internal/progress"
	"github.com/pushd/pushd/migrate"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/query"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// importEnvKey names the environment variable holding the original's master key.
const importEnvKey = "PUSHD_IMPORT_MASTER_KEY"

// importIO is what the import and export commands read and write besides files: stdin (a
// terminal for the key prompt), stdout, stderr.
type importIO struct {
	stdin          *os.File
	stdout, stderr io.Writer
	stderrTerminal bool
	readKey        func() (string, error) // nil: from importEnvKey, else a prompt on a terminal
}

// openAppStore opens the data directory's store and reads the app.
func openAppStore(ctx context.Context, data, appID string) (*pebble.Store, push.App, error) {
	st, err := pebble.Open(storeDir(data), pebble.Options{})
	if err != nil {
		return nil, push.App{}, fmt.Errorf("cannot open store (stop a running pushd serve on this data directory): %w", err)
	}
	app, err := st.GetApp(ctx, appID)
	if err != nil {
		_ = st.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, push.App{}, fmt.Errorf("app %s does not exist in %s: create it first (pushd app create)", appID, data)
		}
		return nil, push.App{}, fmt.Errorf("cannot read app %s: %w", appID, err)
	}
	return st, app, nil
}

func importCmd(ctx context.Context, args []string, cio importIO) (err error) {
	fs := flag.NewFlagSet("pushd import", flag.ContinueOnError)
	data := fs.String("data", envOr("PUSHD_DATA", "./data"), "data directory (PUSHD_DATA); pushd serve must be stopped")
	appID := fs.String("app", "", "the pushd app to import into (required)")
	from := fs.String("from", "", "pull live from the original's API server at this URL (https://...) instead of a file")
	fromID := fs.String("from-id", "", "the app id at the original (default: --app)")
	since := fs.String("since", "", "with --from: pull only rows updated after this time (ISO 8601, e.g. 2026-12-01T00:00:00Z)")
	pageSize := fs.Int("page-size", migrate.MaxPageSize, "with --from: rows per scan page (1 to 1000)")
	format := fs.String("format", "", "file format: jsonl, results, array or bson (default: from the name and content)")
	asJSON := fs.Bool("json", false, "print the whole report as JSON (every count, up to 1000 refused rows)")
	interval := fs.Duration("progress-interval", 5*time.Second, "between progress lines when stderr is not a terminal")
	if ok, perr := parseHelpAware(fs, cio.stdout, cio.stderr, func() error { return fs.Parse(args) }); !ok {
		return perr
	}
	if *appID == "" {
		return errors.New("import needs --app")
	}
	if err := faultpoint.Check(); err != nil {
		return err
	}
	f, err := migrate.ParseFormat(*format)
	if err != nil {
		return err
	}
	var cfg migrate.PullConfig
	var file string
	switch {
	case *from != "" && fs.NArg() > 0:
		return errors.New("import takes --from or a file, not both")
	case *from != "":
		cfg = migrate.PullConfig{URL: *from, AppID: *fromID, PageSize: *pageSize}
		if cfg.AppID == "" {
			cfg.AppID = *appID
		}
		if *since != "" {
			t, ok := query.ParseISO(*since)
			if !ok {
				return fmt.Errorf("--since %q: want an ISO 8601 time such as 2026-12-01T00:00:00Z", *since)
			}
			cfg.Since = t
		}
		if cfg.MasterKey, err = masterKey(cio); err != nil {
			return err
		}
	case fs.NArg() == 1:
		file = fs.Arg(0)
		if *since != "" {
			return errors.New("--since applies to --from only (export files are filtered by the console)")
		}
	default:
		return errors.New("import needs --from <url> or one file (- for stdin)")
	}

	st, app, err := openAppStore(ctx, *data, *appID)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot close store: %w", cerr)
		}
	}()
	l := migrate.NewLoader(st, app)
	prog := &progress.Meter{W: cio.stderr, Terminal: cio.stderrTerminal, Label: "import", Unit: "rows", Interval: *interval}
	start := time.Now()
	if *from != "" {
		err = pull(ctx, *data, cfg, l, prog, cio)
	} else {
		err = importFile(ctx, file, f, l, prog, cio)
	}
	rep := l.Report()
	if err != nil {
		if rep.Rows > 0 {
			fmt.Fprintf(cio.stderr, "import stopped after %d rows (%d stored); run the same command again to go on\n", rep.Rows, rep.Stored)
		}
		return err
	}
	prog.Done(int64(rep.Rows), 0)
	printReport(cio.stdout, rep, *asJSON)
	if *from != "" && !*asJSON {
		origin := ""
		if cfg.AppID != *appID {
			origin = " --from-id " + cfg.AppID
		}
		fmt.Fprintf(cio.stdout, "to pull what changes from now on (at cut-over): pushd import --from %s --app %s%s --since %s\n",
			*from, *appID, origin, push.FormatTime(start.Add(-time.Minute)))
	}
	return nil
}

func importFile(ctx context.Context, name string, f migrate.Format, l *migrate.Loader, prog *progress.Meter, cio importIO) error {
	var r io.Reader = cio.stdin
	if name != "-" {
		fh, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", name, err)
		}
		defer fh.Close()
		if fi, err := fh.Stat(); err == nil {
			prog.Total = fi.Size()
		}
		r = fh
	}
	return migrate.ReadFile(ctx, l, r, name, f, func(n int64) { prog.Update(int64(l.Report().Rows), n) })
}

// pull runs a live pull, resuming from the state file a killed or failed run left.
func pull(ctx context.Context, data string, cfg migrate.PullConfig, l *migrate.Loader, prog *progress.Meter, cio importIO) error {
	statePath := filepath.Join(data, "import-"+cfg.AppID+".pull.json")
	var st migrate.PullState
	if b, err := os.ReadFile(statePath); err == nil {
		var saved migrate.PullState
		if json.Unmarshal(b, &saved) == nil && saved.Matches(&cfg) {
			st = saved
			fmt.Fprintf(cio.stderr, "resuming the pull after %d rows\n", st.Rows)
		}
	}
	if n, err := migrate.Count(ctx, cfg); err == nil {
		prog.Total = int64(n)
	} else if errors.Is(err, migrate.ErrRejected) {
		return fmt.Errorf("cannot pull from %s: %w", cfg.URL, err)
	}
	save := func(s migrate.PullState) error { return writeFileAtomic(statePath, s) }
	err := migrate.Pull(ctx, cfg, l, &st, save, func(rows int) { prog.Update(int64(l.Report().Rows), int64(rows)) })
	if err != nil {
		return fmt.Errorf("cannot pull from %s: %w", cfg.URL, err)
	}
	if err := os.Remove(statePath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w", statePath, err)
	}
	return nil
}

// writeFileAtomic writes v as JSON to path through a synced temporary file and a rename.
func writeFileAtomic(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("cannot save the pull's state: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot save the pull's state: %w", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot save the pull's state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot save the pull's state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cannot save the pull's state: %w", err)
	}
	return nil
}

func masterKey(cio importIO) (string, error) {
	if k := os.Getenv(importEnvKey); k != "" {
		return k, nil
	}
	if cio.readKey != nil {
		return cio.readKey()
	}
	return promptKey(cio.stdin, cio.stderr)
}

func printReport(w io.Writer, rep *api.ImportReport, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "rows read %d: stored %d, kept (newer version already stored) %d, stale (device taken by a newer installation) %d, conflicts %d, refused %d\n",
		rep.Rows, rep.Stored, rep.KeptNewer, rep.Stale, rep.Conflicts, rep.Refused)
	if rep.Inactive > 0 {
		fmt.Fprintf(w, "  %d stored rows were last updated more than 90 days ago: the sweeper deletes them at its next pass, as the original service would\n", rep.Inactive)
	}
	for reason, n := range rep.Reasons {
		fmt.Fprintf(w, "  refused %d: code %s\n", n, reason)
	}
	for i, r := range rep.Refusals {
		if i == 20 {
			fmt.Fprintf(w, "  ... (--json lists up to %d refused rows)\n", api.MaxImportRefusals)
			break
		}
		fmt.Fprintf(w, "  row %d %s: code %d: %s\n", r.Row, r.ObjectID, r.Code, r.Error)
	}
}

func exportCmd(ctx context.Context, args []string, cio importIO) (err error) {
	fs := flag.NewFlagSet("pushd export", flag.ContinueOnError)
	data := fs.String("data", envOr("PUSHD_DATA", "./data"), "data directory (PUSHD_DATA); pushd serve must be stopped")
	appID := fs.String("app", "", "the app to export (required)")
	out := fs.String("out", "-", "file to write (- for stdout)")
	interval := fs.Duration("progress-interval", 5*time.Second, "between progress lines when stderr is not a terminal")
	if ok, perr := parseHelpAware(fs, cio.stdout, cio.stderr, func() error { return fs.Parse(args) }); !ok {
		return perr
	}
	if *appID == "" {
		return errors.New("export needs --app")
	}
	st, app, err := openAppStore(ctx, *data, *appID)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot close store: %w", cerr)
		}
	}()
	w := cio.stdout
	var fh *os.File
	if *out != "-" {
		if fh, err = os.Create(*out); err != nil {
			return fmt.Errorf("cannot create %s: %w", *out, err)
		}
		w = fh
	}
	prog := &progress.Meter{W: cio.stderr, Terminal: cio.stderrTerminal, Label: "export", Unit: "rows",
		Interval: *interval, Total: int64(app.Settings.Buckets)}
	prog.Update(0, 0)
	n, err := migrate.Export(ctx, st, app, w, func(rows, buckets int) { prog.Update(int64(rows), int64(buckets)) })
	if err == nil {
		prog.Done(int64(n), int64(app.Settings.Buckets))
	}
	if fh != nil {
		if cerr := fh.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("cannot write %s: %w", *out, cerr)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cio.stderr, "exported %d installations of app %s\n", n, app.ID)
	return nil
}
