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
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/pebble"
)

// appKeys is the JSON `pushd app create --json` prints and dev-app.json holds.
type appKeys struct {
	AppID     string `json:"appId"`
	AppKey    string `json:"appKey"`
	MasterKey string `json:"masterKey"`
}

func appCreate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pushd app create", flag.ContinueOnError)
	name := fs.String("name", "", "app name (required)")
	asJSON := fs.Bool("json", false, `print {"appId","appKey","masterKey"} as JSON ({"appId"} with --id)`)
	data := fs.String("data", envOr("PUSHD_DATA", "./data"), "data directory (PUSHD_DATA)")
	edition := fs.String("edition", string(push.EditionChina), "china|international")
	buckets := fs.Int("buckets", push.DefaultBuckets, "bucket count, a power of two, fixed for the app's life")
	id := fs.String("id", "", "serve the app under this id of the original service; its app key and master key come from PUSHD_APP_KEY and PUSHD_MASTER_KEY (never flags)")
	if ok, err := parseHelpAware(fs, stdout, stderr, func() error { return fs.Parse(args) }); !ok {
		return err
	}
	if *name == "" {
		return errors.New("app create needs --name")
	}
	var ident *api.Identity
	if *id != "" {
		// Keys never travel in flags: argv is readable by every user of the machine (ps)
		// and lands in shell history.
		ident = &api.Identity{AppID: *id, AppKey: os.Getenv("PUSHD_APP_KEY"), MasterKey: os.Getenv("PUSHD_MASTER_KEY")}
		if ident.AppKey == "" || ident.MasterKey == "" {
			return errors.New("app create --id needs the original app key in PUSHD_APP_KEY and its master key in PUSHD_MASTER_KEY")
		}
		if perr := ident.Validate(); perr != nil {
			return errors.New(perr.Message)
		}
	}
	st, err := pebble.Open(storeDir(*data), pebble.Options{})
	if err != nil {
		return fmt.Errorf("cannot open store (stop a running pushd serve on this data directory, or use the admin API): %w", err)
	}
	ed := push.Edition(*edition)
	req := api.AppRequest{Name: name, Settings: &api.SettingsRequest{Edition: &ed, Buckets: buckets}}
	var (
		app  push.App
		perr *push.Error
	)
	if ident != nil {
		app, perr, err = api.CreateAppWithIdentity(ctx, st, req, *ident, time.Now())
	} else {
		app, perr, err = api.CreateApp(ctx, st, req, time.Now())
	}
	cerr := st.Close()
	if perr != nil {
		return errors.New(perr.Message)
	}
	if err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("cannot close store: %w", cerr)
	}
	keys := appKeys{AppID: app.ID, AppKey: app.AppKey, MasterKey: app.MasterKey}
	if ident != nil {
		// The keys are the caller's own: never echoed, in JSON either.
		keys.AppKey, keys.MasterKey = "", ""
	}
	if *asJSON {
		b, _ := json.Marshal(keys)
		if ident != nil {
			b, _ = json.Marshal(struct {
				AppID string `json:"appId"`
			}{keys.AppID})
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	if ident != nil {
		// The keys are the caller's own: do not echo them to a terminal or a log.
		fmt.Fprintf(stdout, "app %q created under the original identity\n  appId:     %s\n  appKey:    (from PUSHD_APP_KEY)\n  masterKey: (from PUSHD_MASTER_KEY)\n", app.Name, keys.AppID)
		return nil
	}
	fmt.Fprintf(stdout, "app %q created\n  appId:     %s\n  appKey:    %s\n  masterKey: %s\n", app.Name, keys.AppID, keys.AppKey, keys.MasterKey)
	return nil
}

// ensureDevApp creates an app named "dev" when the store has none, writes its keys to
// <data>/dev-app.json and <data>/dev-app.env (mode 0600), and prints them on every dev start.
func ensureDevApp(ctx context.Context, st store.Store, data string, stdout io.Writer) error {
	jsonPath := filepath.Join(data, "dev-app.json")
	envPath := filepath.Join(data, "dev-app.env")
	apps, err := st.ListApps(ctx)
	if err != nil {
		return fmt.Errorf("cannot list apps: %w", err)
	}
	if len(apps) == 0 {
		app, perr, err := api.CreateApp(ctx, st, api.AppRequest{Name: ptr("dev")}, time.Now())
		if perr != nil {
			return errors.New(perr.Message)
		}
		if err != nil {
			return err
		}
		keys := appKeys{AppID: app.ID, AppKey: app.AppKey, MasterKey: app.MasterKey}
		b, _ := json.MarshalIndent(keys, "", "  ")
		if err := os.WriteFile(jsonPath, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("cannot write %s: %w", jsonPath, err)
		}
		env := fmt.Sprintf("export PUSHD_APP_ID=%s\nexport PUSHD_APP_KEY=%s\nexport PUSHD_MASTER_KEY=%s\n", keys.AppID, keys.AppKey, keys.MasterKey)
		if err := os.WriteFile(envPath, []byte(env), 0o600); err != nil {
			return fmt.Errorf("cannot write %s: %w", envPath, err)
		}
		fmt.Fprintf(stdout, "created the dev app (first start)\n")
	}
	b, err := os.ReadFile(jsonPath)
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stdout, "dev mode: the store already has apps and no %s; create one with the admin API or pushd app create\n", jsonPath)
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read %s: %w", jsonPath, err)
	}
	var keys appKeys
	if err := json.Unmarshal(b, &keys); err != nil {
		return fmt.Errorf("cannot parse %s: %w", jsonPath, err)
	}
	fmt.Fprintf(stdout, "dev app (keys in %s; `. %s` sets PUSHD_APP_ID, PUSHD_APP_KEY, PUSHD_MASTER_KEY):\n  appId:     %s\n  appKey:    %s\n  masterKey: %s\n",
		jsonPath, envPath, keys.AppID, keys.AppKey, keys.MasterKey)
	return nil
}

func ptr[T any](v T) *T { return &v }

// devApp reads the dev app named by <data>/dev-app.json.
func devApp(ctx context.Context, st store.Store, data string) (push.App, error) {
	jsonPath := filepath.Join(data, "dev-app.json")
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return push.App{}, fmt.Errorf("cannot read the dev app's keys: %w", err)
	}
	var keys appKeys
	if err := json.Unmarshal(b, &keys); err != nil {
		return push.App{}, fmt.Errorf("cannot parse %s: %w", jsonPath, err)
	}
	app, err := st.GetApp(ctx, keys.AppID)
	if err != nil {
		return push.App{}, fmt.Errorf("cannot read the dev app %s: %w", keys.AppID, err)
	}
	return app, nil
}
