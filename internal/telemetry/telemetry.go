// Package telemetry owns what every role shares for observability: building the zap logger
// (JSON in production, console in dev), the snake_case log field keys, and writing the
// metric sets of all components in Prometheus text format for /metrics.
//
// Concurrency: the logger and Registry are safe for concurrent use; Registry.Add is meant to
// be called during wiring, before serving.
package telemetry

import (
	"fmt"
	"io"
	"sync"

	"github.com/VictoriaMetrics/metrics"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Log field keys (STYLE.md §6). Use these, never ad-hoc spellings.
const (
	KeyAppID     = "app_id"
	KeyJobID     = "job_id"
	KeyTaskID    = "task_id"
	KeyBucket    = "bucket"
	KeyPartition = "partition"
	KeyOffset    = "offset"
	KeyVendor    = "vendor"
	KeyAttempt   = "attempt"
	KeyRole      = "role"
	KeyService   = "service"
	KeyRoute     = "route"
	KeyStatus    = "status"
	KeyAddr      = "addr"
	KeyObjectID  = "object_id"
)

// LoggerConfig selects the logger's shape.
type LoggerConfig struct {
	Dev   bool   // console encoder, debug level, no sampling
	Level string // debug|info|warn|error; "" ⇒ info (debug when Dev)
}

// NewLogger builds the process logger: JSON with ISO 8601 times and sampling in production,
// a colour-free console encoder in dev. It writes to stderr.
func NewLogger(cfg LoggerConfig) (*zap.Logger, error) {
	var zc zap.Config
	if cfg.Dev {
		zc = zap.NewDevelopmentConfig()
		zc.DisableStacktrace = true // dev warnings are read by people at a terminal
	} else {
		zc = zap.NewProductionConfig()
		zc.EncoderConfig.TimeKey = "ts"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	}
	if cfg.Level != "" {
		lvl, err := zapcore.ParseLevel(cfg.Level)
		if err != nil {
			return nil, fmt.Errorf("cannot parse log level %q: %w", cfg.Level, err)
		}
		zc.Level = zap.NewAtomicLevelAt(lvl)
	}
	l, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("cannot build logger: %w", err)
	}
	return l, nil
}

// Registry is the list of metric sets the process exposes on /metrics: each component gets
// its own *metrics.Set, and wiring adds it here.
type Registry struct {
	mu      sync.Mutex
	sets    []*metrics.Set
	process bool
}

// NewRegistry returns a registry; withProcess adds Go runtime and process metrics
// (go_*, process_*) to the output.
func NewRegistry(withProcess bool) *Registry {
	return &Registry{process: withProcess}
}

// Add registers a set and returns it, for `set := reg.Add(metrics.NewSet())`.
func (r *Registry) Add(s *metrics.Set) *metrics.Set {
	r.mu.Lock()
	r.sets = append(r.sets, s)
	r.mu.Unlock()
	return s
}

// WritePrometheus writes every registered set in Prometheus text format.
func (r *Registry) WritePrometheus(w io.Writer) {
	r.mu.Lock()
	sets := append([]*metrics.Set(nil), r.sets...)
	r.mu.Unlock()
	for _, s := range sets {
		s.WritePrometheus(w)
	}
	if r.process {
		metrics.WriteProcessMetrics(w)
	}
}
