package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Browser tests of the web console (api/console). They drive Debian's headless Chromium with
// chromedp against the real binary (`pushd serve --dev --sim`). Without Chromium they skip,
// unless PUSHD_BROWSER_TESTS=required (CI: .ci/run, make test-browser), where a missing
// browser fails them. PUSHD_CONSOLE_SCREENSHOTS=<dir> keeps the pages' screenshots there
// (make console-screenshots writes docs/console/).
const (
	browserEnv     = "PUSHD_BROWSER_TESTS"
	screenshotsEnv = "PUSHD_CONSOLE_SCREENSHOTS"
	browserTimeout = 3 * time.Minute // the whole browser session
	consoleDevices = 1000
	// Every consoleBadEvery-th device has a token the APNs simulator refuses: the record then
	// has failures and failure reasons to show.
	consoleBadEvery = 100
	consoleSent     = consoleDevices - consoleDevices/consoleBadEvery
)

// chromium finds the browser, or skips (fails when the environment requires it).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests skipped with -short")
	}
	switch os.Getenv(browserEnv) {
	case "ran":
		t.Skip("the browser tests ran in make test-browser")
	}
	for _, name := range []string{os.Getenv("PUSHD_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(browserEnv) == "required" {
		t.Fatalf("no Chromium on PATH and %s=required: run scripts/install-chromium.sh (make test-browser does)", browserEnv)
	}
	t.Skip("no Chromium on PATH: make test-browser installs it and runs the console's browser tests")
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a tab's context. Every
// JavaScript dialog (the console's confirm before a cancel) is accepted. seen receives the
// URL and headers of every request the page sends.
func browser(t *testing.T, path string, seen func(url string, headers network.Headers)) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1366, 860), // a laptop screen
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(tcancel)
	chromedp.ListenTarget(tab, func(ev any) {
		switch e := ev.(type) {
		case *page.EventJavascriptDialogOpening:
			go func() { _ = chromedp.Run(tab, page.HandleJavaScriptDialog(true)) }()
		case *network.EventRequestWillBeSent:
			seen(e.Request.URL, e.Request.Headers)
		}
	})
	if err := chromedp.Run(tab, network.Enable()); err != nil {
		t.Fatalf("cannot start Chromium (%s): %v", path, err)
	}
	return tab
}

// shoot saves a screenshot of the whole page as <name>.png in the screenshot directory.
func shoot(dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return fmt.Errorf("cannot take screenshot %s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

// until waits, with the session's deadline, for a JavaScript expression to be true in the page.
func until(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(pushTimeout))
}

// labelled is true when every form control of the page has a label (a <label> or aria-label).
const labelled = `[...document.querySelectorAll('main input, main select, main textarea')].every((e) => e.labels.length > 0 || e.getAttribute('aria-label'))`

// seedConsoleDevices creates n iOS installations in channel ch, 50 per batch call.
func seedConsoleDevices(t *testing.T, c *client, n int, ch string) {
	t.Helper()
	for start := 0; start < n; start += 50 {
		var reqs []map[string]any
		for i := start; i < min(start+50, n); i++ {
			token := fmt.Sprintf("%064x", 0xc0050000+i)
			if i%consoleBadEvery == consoleBadEvery-1 {
				token = fmt.Sprintf("%066x", 0xc0050000+i) // the API takes it, the simulator answers BadDeviceToken
			}
			reqs = append(reqs, map[string]any{"method": "POST", "path": "/1.1/installations", "body": map[string]any{
				"deviceType": "ios", "deviceToken": token, "apnsTopic": "com.example.pushd",
				"channels": []string{ch}, "lang": []string{"en", "fr"}[i%2], // the bad tokens are all "fr"
			}})
		}
		status, b, err := c.call("POST", "/1.1/batch", false, map[string]any{"requests": reqs})
		if err != nil || status != http.StatusOK || strings.Contains(string(b), `"error"`) {
			t.Fatalf("batch of installations from %d: %d %s: %v", start, status, b, err)
		}
	}
}

// TestE2EConsoleBrowser signs in to the console in Chromium, counts and sends a push to 1,000
// devices from the compose page, watches its record reach done with every device sent, sees a
// push sent meanwhile appear and finish on the records page without a reload, schedules a push
// and cancels it from the scheduled page, and searches installations with a where. The key is
// sent as headers only: no URL the page requests holds it, and pushd's output does not either.
func TestE2EConsoleBrowser(t *testing.T) {
	chrome := chromium(t)
	shots := os.Getenv(screenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	d := startDevSim(t, data)
	p, keys, c := d.pushd, d.keys, d.c
	seedConsoleDevices(t, c, consoleDevices, "console")
	keyInOutput := strings.Count(p.out.String(), keys.MasterKey) // --dev prints the dev app's keys once

	var mu sync.Mutex
	var urls []string
	apiCalls, withKey := 0, 0
	tab := browser(t, chrome, func(url string, h network.Headers) {
		mu.Lock()
		defer mu.Unlock()
		urls = append(urls, url)
		if strings.Contains(url, "/1.1/") {
			apiCalls++
			if h["X-LC-Key"] == keys.MasterKey+",master" && h["X-LC-Id"] == keys.AppID {
				withKey++
			}
		}
	})
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(tab, actions...); err != nil {
			var html string
			_ = chromedp.Run(tab, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
			t.Fatalf("%s: %v\npage: %s", what, err, html)
		}
	}

	// Sign in: a wrong key is refused on the page, the right one opens the records.
	run("open the sign-in page",
		chromedp.Navigate(p.base+"/console"),
		chromedp.WaitVisible("#signin", chromedp.ByQuery),
		shoot(shots, "signin"))
	run("sign in with a wrong key",
		chromedp.SendKeys("#app-id", keys.AppID, chromedp.ByQuery),
		chromedp.SendKeys("#master-key", "wrong-key", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		until(`document.querySelector('#signin [role=alert]')?.textContent.includes('wrong')`))
	run("sign in from the keyboard",
		until(labelled),
		chromedp.Evaluate(`document.querySelector('#master-key').value = ''`, nil),
		chromedp.SendKeys("#master-key", keys.MasterKey+kb.Enter, chromedp.ByQuery),
		until(`document.querySelector('#records .empty')?.textContent === 'No push records yet.'`))

	// Compose: the dry run counts the channel's 1,000 devices, then the push is sent.
	var hash string
	run("compose and count the audience",
		chromedp.Click(`#nav a[data-section=compose]`, chromedp.ByQuery),
		chromedp.WaitVisible("#compose", chromedp.ByQuery),
		chromedp.Click("#target-channels", chromedp.ByQuery),
		chromedp.SendKeys("#channels", "console", chromedp.ByQuery),
		chromedp.SendKeys("#alert", "Spring sale: 20% off today", chromedp.ByQuery),
		chromedp.SendKeys("#title", "Spring sale", chromedp.ByQuery),
		until(labelled),
		chromedp.Click("#review", chromedp.ByQuery),
		until(`document.querySelector('#audience')?.textContent === '1,000'`),
		until(`document.querySelector('#review-result .chip[data-channel=apns]')?.textContent === 'apns 1,000'`),
		shoot(shots, "compose"))
	if n := recordCount(t, c); n != 0 {
		t.Fatalf("the dry run left %d push records", n)
	}
	run("send the push and watch its record reach done",
		chromedp.Click("#send", chromedp.ByQuery),
		until(`location.hash.startsWith('#/record/')`),
		chromedp.Evaluate(`location.hash`, &hash),
		until(`document.querySelector('#record .status')?.dataset.status === 'done'`),
		until(`document.querySelector('#record progress')?.value === 100`),
		until(`[...document.querySelectorAll('#record-channels tbody tr')].some(r => r.textContent.startsWith('apns1,000990'))`),
		shoot(shots, "record"))
	oid := strings.TrimPrefix(hash, "#/record/")
	rec := c.waitDone(t, oid)
	if rec.Devices != consoleDevices || rec.Successes != consoleSent {
		t.Fatalf("the console's push: %d devices, %d sent, want %d and %d", rec.Devices, rec.Successes, consoleDevices, consoleSent)
	}

	// Records: the push is listed done; a push sent meanwhile (by the API) appears without a
	// reload and is followed live until done.
	run("open the records",
		chromedp.Click(`#nav a[data-section=records]`, chromedp.ByQuery),
		until(`document.querySelector('#records-table tr[data-oid="`+oid+`"]')?.dataset.status === 'done'`))
	// A background push at priority 10 sent meanwhile by the API, which APNs refuses for every
	// device (BadPriority), to the French half less the bad tokens the first push dropped.
	second := c.push(t, map[string]any{"channels": []string{"console"}, "where": map[string]any{"lang": "fr"},
		"data": map[string]any{"alert": "Sync", "content-available": 1, "apns-push-type": "background", "apns-priority": 10}})
	rec2 := c.waitDone(t, second)
	if rec2.Devices == 0 || rec2.Failures != rec2.Devices {
		t.Fatalf("the background push at priority 10: %d devices, %d failed, want all failed", rec2.Devices, rec2.Failures)
	}
	row := `#records-table tr[data-oid="` + second + `"]`
	run("see the new push appear and finish live",
		until(`document.querySelector('`+row+`')?.dataset.status === 'done'`),
		until(`document.querySelector('#records-table tbody tr').dataset.oid === '`+second+`'`), // newest first
		until(fmt.Sprintf(`document.querySelector('%s .chip[data-channel=apns]')?.textContent === 'apns 0/%d'`, row, rec2.Devices)),
		shoot(shots, "records"))
	// A refresh of the list must leave the keyboard focus where it was.
	var kept bool
	run("focus a record's link and let the list refresh",
		chromedp.Focus(row+` a`, chromedp.ByQuery),
		chromedp.Evaluate(`window.consoleTestUpdated = document.querySelector('#records-updated').textContent`, nil),
		until(`document.querySelector('#records-updated').textContent !== window.consoleTestUpdated`),
		chromedp.Evaluate(`document.activeElement === document.querySelector('`+row+` a')`, &kept))
	if !kept {
		t.Fatalf("the records page's refresh took the keyboard focus off the focused link")
	}
	run("open the failed push's record and read its failure reasons",
		chromedp.Click(row+` a`, chromedp.ByQuery),
		until(`[...document.querySelectorAll('#record-errors li')].some(li => li.textContent === 'BadPriority')`),
		shoot(shots, "record-failures"))

	// Scheduled: a push an hour ahead is scheduled from the compose page, then cancelled.
	run("schedule a push",
		chromedp.Click(`#nav a[data-section=compose]`, chromedp.ByQuery),
		chromedp.WaitVisible("#compose", chromedp.ByQuery),
		chromedp.Click("#target-where", chromedp.ByQuery),
		chromedp.SendKeys("#where", `{"channels": "console", "lang": "en"}`, chromedp.ByQuery),
		chromedp.SendKeys("#alert", "Tomorrow's deals", chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const d = new Date(Date.now() + 3600e3), p = (n) => String(n).padStart(2, '0');
			document.querySelector('#push-time').value = d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()); return true })()`, nil),
		chromedp.Click("#review", chromedp.ByQuery),
		until(`document.querySelector('#audience')?.textContent === '500'`),
		chromedp.Click("#send", chromedp.ByQuery),
		until(`location.hash === '#/scheduled'`),
		until(`document.querySelectorAll('#scheduled-table tbody tr').length === 1`),
		shoot(shots, "scheduled"))
	if n := scheduledCount(t, c); n != 1 {
		t.Fatalf("%d scheduled pushes after scheduling one", n)
	}
	run("cancel the scheduled push",
		chromedp.Click(`#scheduled-table tbody tr button`, chromedp.ByQuery),
		until(`document.querySelector('#scheduled-empty') !== null`))
	if n := scheduledCount(t, c); n != 0 {
		t.Fatalf("%d scheduled pushes after cancelling it in the console", n)
	}

	// Installations: a where finds half the devices.
	run("search installations",
		chromedp.Click(`#nav a[data-section=installations]`, chromedp.ByQuery),
		chromedp.WaitVisible("#inst-search", chromedp.ByQuery),
		chromedp.SendKeys("#inst-where", `{"channels": "console", "lang": "en"}`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector('#inst-limit').value = '10'`, nil),
		until(labelled),
		chromedp.Click("#inst-search-submit", chromedp.ByQuery),
		until(`document.querySelector('#inst-count')?.textContent === '500 installations match (showing 10)'`),
		until(`document.querySelectorAll('#inst-table tbody tr').length === 10`),
		shoot(shots, "installations"))

	// Signing out forgets the key: a reload shows the sign-in page.
	run("sign out",
		chromedp.Click("#signout", chromedp.ByQuery),
		chromedp.WaitVisible("#signin", chromedp.ByQuery),
		chromedp.Reload(),
		chromedp.WaitVisible("#signin", chromedp.ByQuery))

	mu.Lock()
	defer mu.Unlock()
	for _, u := range urls {
		if strings.Contains(u, keys.MasterKey) {
			t.Errorf("the page requested a URL holding the master key: %s", u)
		}
	}
	if apiCalls == 0 || withKey < apiCalls-1 { // the wrong-key sign-in is the one call without it
		t.Errorf("%d API calls, %d with the master key headers", apiCalls, withKey)
	}
	if n := strings.Count(p.out.String(), keys.MasterKey); n != keyInOutput {
		t.Errorf("pushd's output holds the master key %d times after the browser session, %d before", n, keyInOutput)
	}
}

func recordCount(t *testing.T, c *client) int {
	t.Helper()
	return resultsCount(t, c, "/1.1/notifications")
}

func scheduledCount(t *testing.T, c *client) int {
	t.Helper()
	return resultsCount(t, c, "/1.1/scheduledPushMessages")
}

func resultsCount(t *testing.T, c *client, path string) int {
	t.Helper()
	status, b, err := c.call("GET", path, true, nil)
	if err != nil || status != http.StatusOK {
		t.Fatalf("GET %s: %d %s: %v", path, status, b, err)
	}
	var r struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return len(r.Results)
}
