package driver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Profiling (make profile): with ProfileDir and PprofURL (pushd's ops port with --pprof), each
// scenario's push is profiled. CPU: consecutive profiles of profileChunk seconds from the
// first push call until every record is done (`go tool pprof` merges them); allocations: the
// allocs profile before and after, to be read with -base.

// profileChunk is the length of one CPU profile, seconds: the last one ends at most this
// long after the push.
const profileChunk = 2

type profiler struct {
	hc   *http.Client
	base string // http://ops-addr
	dir  string
	name string // scenario
	stop chan struct{}
	done chan error
}

// startProfile starts profiling scenario name; nil when profiling is off.
func (r *run) startProfile(ctx context.Context, name string) (*profiler, error) {
	if r.cfg.ProfileDir == "" || r.cfg.PprofURL == "" {
		return nil, nil
	}
	if err := os.MkdirAll(r.cfg.ProfileDir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot make the profile directory: %w", err)
	}
	p := &profiler{hc: &http.Client{}, base: strings.TrimRight(r.cfg.PprofURL, "/"), dir: r.cfg.ProfileDir, name: name,
		stop: make(chan struct{}), done: make(chan error, 1)}
	if err := p.fetch(ctx, "/debug/pprof/allocs", name+"-allocs-before.pb.gz"); err != nil {
		return nil, err
	}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				p.done <- nil
				return
			default:
			}
			if err := p.fetch(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", profileChunk), fmt.Sprintf("%s-cpu-%03d.pb.gz", name, i)); err != nil {
				p.done <- err
				return
			}
		}
	}()
	return p, nil
}

// finish waits for the current CPU profile and takes the allocation profile.
func (p *profiler) finish(ctx context.Context) error {
	if p == nil {
		return nil
	}
	close(p.stop)
	if err := <-p.done; err != nil {
		return err
	}
	return p.fetch(ctx, "/debug/pprof/allocs", p.name+"-allocs.pb.gz")
}

func (p *profiler) fetch(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return fmt.Errorf("cannot build the profile request %s: %w", path, err)
	}
	res, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot fetch profile %s from pushd: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 256))
		return fmt.Errorf("cannot fetch profile %s from pushd (started with --pprof?): HTTP %d: %s", path, res.StatusCode, b)
	}
	f, err := os.Create(filepath.Join(p.dir, file))
	if err != nil {
		return fmt.Errorf("cannot write profile %s: %w", file, err)
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("cannot write profile %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot write profile %s: %w", file, err)
	}
	return nil
}
