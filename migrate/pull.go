package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pushd/pushd/push"
)

// The original's scan endpoint: pages of {results, cursor} in objectId order, up to 1000 rows
// a page (100 by default), cursor null at the end; a cursor must be used within 10 minutes.
const (
	MaxPageSize     = 1000
	installationCls = "_Installation"
)

// PullConfig says where and how to pull from.
type PullConfig struct {
	URL       string    // the original's API server, e.g. https://api.example.com
	AppID     string    // sent as X-LC-Id
	MasterKey string    // sent as X-LC-Key "<key>,master"; never logged
	Since     time.Time // zero: every row; else rows updated after it
	PageSize  int       // limit per page, 1 to MaxPageSize; default MaxPageSize
	// MaxAttempts bounds the tries of one request (network errors, 5xx, 429). Default 10.
	MaxAttempts int
	// MaxBackoff caps the wait between tries, and a Retry-After. Default 30s.
	MaxBackoff time.Duration
	// Timeout bounds one request. Default 60s.
	Timeout time.Duration
	Client  *http.Client // default: a client with Timeout

	// sleep waits d or until ctx ends (tests: no real waiting).
	sleep func(ctx context.Context, d time.Duration) error
	// flushRows overrides flushRows (tests: small walks with several saves).
	flushRows int
}

func (c *PullConfig) withDefaults() (PullConfig, error) {
	out := *c
	if out.PageSize == 0 {
		out.PageSize = MaxPageSize
	}
	if out.PageSize < 1 || out.PageSize > MaxPageSize {
		return out, fmt.Errorf("page size %d: want 1 to %d", out.PageSize, MaxPageSize)
	}
	u, err := url.Parse(out.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return out, fmt.Errorf("cannot use %q as the original server: want http(s)://host[:port]", out.URL)
	}
	out.URL = strings.TrimSuffix(out.URL, "/")
	if out.AppID == "" || out.MasterKey == "" {
		return out, errors.New("the app id and the original's master key are required")
	}
	if out.MaxAttempts <= 0 {
		out.MaxAttempts = 10
	}
	if out.MaxBackoff <= 0 {
		out.MaxBackoff = 30 * time.Second
	}
	if out.Timeout <= 0 {
		out.Timeout = 60 * time.Second
	}
	if out.Client == nil {
		out.Client = &http.Client{Timeout: out.Timeout}
	}
	if out.flushRows <= 0 {
		out.flushRows = flushRows
	}
	if out.sleep == nil {
		out.sleep = sleepCtx
	}
	return out, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// PullState is where a pull stands, saved after every durable write so that a rerun resumes.
type PullState struct {
	From   string `json:"from"`
	AppID  string `json:"appId"`
	Since  string `json:"since,omitempty"`
	Cursor string `json:"cursor,omitempty"` // the next page; "" before the first
	Rows   int    `json:"rows"`             // rows received and written so far
}

// Matches says whether a saved state belongs to the same pull.
func (s *PullState) Matches(cfg *PullConfig) bool {
	return s.From == strings.TrimSuffix(cfg.URL, "/") && s.AppID == cfg.AppID && s.Since == sinceString(cfg.Since)
}

func sinceString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return push.FormatTime(t)
}

// ErrRejected is a reply the original gives for a bad request or bad credentials: retrying
// does not help.
var ErrRejected = errors.New("rejected by the original server")

// page is one scan reply.
type page struct {
	Results []json.RawMessage `json:"results"`
	Cursor  *string           `json:"cursor"`
}

// Pull walks the installations of the original through its scan endpoint into l, resuming
// from st (a zero state starts from the beginning). After each durable write it calls save
// with the new state; on success the state's Cursor is "". progress gets the rows so far.
func Pull(ctx context.Context, cfg PullConfig, l *Loader, st *PullState, save func(PullState) error, progress func(rows int)) error {
	c, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	st.From, st.AppID, st.Since = c.URL, c.AppID, sinceString(c.Since)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type fetched struct {
		p   page
		err error
	}
	pages := make(chan fetched, 2) // the next pages fetched while one is written
	resumed := st.Cursor != ""
	go func() {
		defer close(pages)
		cursor := st.Cursor
		for {
			p, err := c.fetch(ctx, cursor)
			if err != nil && resumed && errors.Is(err, ErrRejected) {
				// The saved cursor expired (the original keeps one 10 minutes): walk again;
				// rows written already are written again to the same state.
				resumed, cursor = false, ""
				select {
				case pages <- fetched{err: errRestart}:
				case <-ctx.Done():
					return
				}
				continue
			}
			resumed = false
			select {
			case pages <- fetched{p: p, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || p.Cursor == nil || *p.Cursor == "" {
				return
			}
			cursor = *p.Cursor
		}
	}()
	// The loader writes one batch while the next is validated: when Flush returns, the batch
	// flushed before is durable, and so the state saved with it (inFlight) can be saved.
	var inFlight *PullState
	defer func() { _ = l.Sync(context.WithoutCancel(ctx)) }() // no write left running on return
	for f := range pages {
		if errors.Is(f.err, errRestart) {
			st.Cursor, st.Rows = "", 0
			continue
		}
		if f.err != nil {
			return f.err
		}
		for _, raw := range f.p.Results {
			st.Rows++
			if err := l.AddRaw(ctx, st.Rows, raw); err != nil {
				return err
			}
		}
		last := f.p.Cursor == nil || *f.p.Cursor == ""
		if last || l.Pending() >= c.flushRows {
			st.Cursor = ""
			if !last {
				st.Cursor = *f.p.Cursor
			}
			flush := l.Flush
			if last {
				flush = l.Sync
			}
			if err := flush(ctx); err != nil {
				return err
			}
			if inFlight != nil {
				if err := save(*inFlight); err != nil {
					return err
				}
			}
			now := *st
			inFlight = &now
			if last {
				if err := save(*st); err != nil {
					return err
				}
			}
		}
		if progress != nil {
			progress(st.Rows)
		}
		if last {
			return nil
		}
	}
	return ctx.Err()
}

// flushRows is how many pulled rows wait before a write and a saved cursor: a few pages, so
// a kill repeats little and a synced write serves thousands of rows.
const flushRows = 8192

var errRestart = errors.New("restart the walk")

// fetch gets one page, retrying network errors, 5xx and 429 with backoff and jitter.
func (c *PullConfig) fetch(ctx context.Context, cursor string) (page, error) {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(c.PageSize))
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if w := c.where(); w != "" {
		q.Set("where", w)
	}
	var p page
	err := c.do(ctx, "/1.1/scan/classes/"+installationCls+"?"+q.Encode(), &p)
	return p, err
}

func (c *PullConfig) where() string {
	if c.Since.IsZero() {
		return ""
	}
	return `{"updatedAt":{"$gt":{"__type":"Date","iso":"` + push.FormatTime(c.Since) + `"}}}`
}

// Count asks the original how many installations the pull will walk (0 when it cannot say).
func Count(ctx context.Context, cfg PullConfig) (int, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return 0, err
	}
	q := url.Values{}
	q.Set("count", "1")
	q.Set("limit", "0")
	if w := c.where(); w != "" {
		q.Set("where", w)
	}
	var r struct {
		Count int `json:"count"`
	}
	if err := c.do(ctx, "/1.1/classes/"+installationCls+"?"+q.Encode(), &r); err != nil {
		return 0, err
	}
	return r.Count, nil
}

func (c *PullConfig) do(ctx context.Context, pathQuery string, into any) error {
	backoff := 500 * time.Millisecond
	var last error
	for attempt := 1; attempt <= c.MaxAttempts; attempt++ {
		wait, err := c.try(ctx, pathQuery, into)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrRejected) || ctx.Err() != nil {
			return err
		}
		last = err
		if wait <= 0 {
			wait = backoff/2 + rand.N(backoff/2+1) // jitter: half to all of the backoff
			backoff = min(2*backoff, c.MaxBackoff)
		}
		wait = min(wait, c.MaxBackoff)
		if attempt < c.MaxAttempts {
			if err := c.sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("cannot read %s from the original after %d tries: %w", strings.SplitN(pathQuery, "?", 2)[0], c.MaxAttempts, last)
}

// try does one request; wait > 0 is the server's Retry-After.
func (c *PullConfig) try(ctx context.Context, pathQuery string, into any) (wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+pathQuery, nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrRejected, err)
	}
	req.Header.Set("X-LC-Id", c.AppID)
	req.Header.Set("X-LC-Key", c.MasterKey+",master")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return 0, fmt.Errorf("cannot read the reply: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return time.Duration(secs) * time.Second, fmt.Errorf("the original answered %d: %s", resp.StatusCode, short(body))
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("%w: %d %s", ErrRejected, resp.StatusCode, short(body))
	}
	if err := json.Unmarshal(body, into); err != nil {
		// A reply cut short is a network error: try again.
		return 0, fmt.Errorf("cannot decode the reply: %w", err)
	}
	return 0, nil
}

func short(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
