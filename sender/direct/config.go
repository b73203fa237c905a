package direct

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Config tunes the gateway. Zero fields take the defaults of WithDefaults.
type Config struct {
	// Addr is where the connect endpoint listens (host:port).
	Addr string
	// Heartbeat is the period at which a device sends {"op":"ping"}; a connection silent for
	// two periods is closed.
	Heartbeat time.Duration
	// MaxFrame bounds a device's frame (bytes): larger ones close the connection (1009).
	MaxFrame int
	// ConnectRate and ConnectBurst bound new connections per second per app (a token bucket):
	// a reconnect storm after a restart must not starve the node.
	ConnectRate  float64
	ConnectBurst int
	// OfflineLimit bounds the cached messages per installation; the oldest are dropped.
	OfflineLimit int
	// WriteTimeout bounds one write to a device; a device that does not take its frames in
	// time is disconnected (its messages stay cached).
	WriteTimeout time.Duration
	// HandshakeTimeout bounds the upgrade request and the checks after it.
	HandshakeTimeout time.Duration
	// RouterTTL is how long a device may keep the router's answer (seconds in the answer).
	RouterTTL time.Duration
	// ReadLoop is how attached connections are read: ReadLoopEpoll (Linux's default: no
	// goroutine per idle connection) or ReadLoopGoroutine (one goroutine each).
	ReadLoop string
	// LCIdle closes a connection of the original's protocol silent for this long. Its SDK
	// pings every 180s and gives up itself after 360s without a pong (HeartBeatPolicy.java),
	// so the gateway waits longer than that.
	LCIdle time.Duration
}

// Defaults.
const (
	DefaultHeartbeat    = 60 * time.Second
	DefaultMaxFrame     = 16 << 10 // an ack of a full offline cache (100 ids) fits many times
	DefaultConnectRate  = 1000
	DefaultOfflineLimit = 100
	DefaultWriteTimeout = 5 * time.Second
	DefaultRouterTTL    = time.Hour
	DefaultLCIdle       = 390 * time.Second // two of the original SDK's 180s ping periods, and a margin
)

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.ConnectRate == 0 {
		c.ConnectRate = DefaultConnectRate
	}
	if c.ConnectBurst == 0 {
		c.ConnectBurst = max(1, int(c.ConnectRate))
	}
	if c.OfflineLimit == 0 {
		c.OfflineLimit = DefaultOfflineLimit
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.RouterTTL == 0 {
		c.RouterTTL = DefaultRouterTTL
	}
	if c.LCIdle == 0 {
		c.LCIdle = DefaultLCIdle
	}
	if c.ReadLoop == "" {
		c.ReadLoop = defaultReadLoop
	}
	return c
}

// Validate checks a config as given (cmd/pushd: the flags' values), so that a zero a user set
// is refused rather than replaced by a default.
func (c Config) Validate() error {
	var errs []error
	if c.Heartbeat < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--direct-heartbeat %s is below 100ms", c.Heartbeat))
	}
	if c.MaxFrame < 256 {
		errs = append(errs, fmt.Errorf("--direct-max-frame %d is below 256 bytes", c.MaxFrame))
	}
	if c.ConnectRate <= 0 || c.ConnectBurst < 0 {
		errs = append(errs, fmt.Errorf("--direct-connect-rate %g must be positive", c.ConnectRate))
	}
	if c.OfflineLimit < 1 {
		errs = append(errs, fmt.Errorf("--direct-offline-limit %d must be at least 1", c.OfflineLimit))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, errors.New("the direct write timeout must be positive"))
	}
	if c.LCIdle < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--direct-lc-idle %s is below 100ms", c.LCIdle))
	}
	switch c.ReadLoop {
	case ReadLoopGoroutine:
	case ReadLoopEpoll:
		if defaultReadLoop != ReadLoopEpoll {
			errs = append(errs, errors.New("--direct-read-loop epoll needs Linux: use goroutine"))
		}
	default:
		errs = append(errs, fmt.Errorf("--direct-read-loop %q is neither %s nor %s", c.ReadLoop, ReadLoopEpoll, ReadLoopGoroutine))
	}
	return errors.Join(errs...)
}

// RegisterFlags registers the gateway's flags under prefix (cmd/pushd: "direct-"; the
// listen address is --gateway-addr).
func (c *Config) RegisterFlags(fs *flag.FlagSet, prefix string) {
	fs.DurationVar(&c.Heartbeat, prefix+"heartbeat", DefaultHeartbeat, "own channel: period of a device's pings; a connection silent for two periods is closed")
	fs.IntVar(&c.MaxFrame, prefix+"max-frame", DefaultMaxFrame, "own channel: largest frame a device may send, in bytes")
	fs.Float64Var(&c.ConnectRate, prefix+"connect-rate", DefaultConnectRate, "own channel: device connects per second per app (burst: one second's worth)")
	fs.IntVar(&c.OfflineLimit, prefix+"offline-limit", DefaultOfflineLimit, "own channel: cached messages kept per offline device; the oldest are dropped")
	fs.DurationVar(&c.LCIdle, prefix+"lc-idle", DefaultLCIdle, "own channel, the original's protocol: a connection silent this long is closed (its SDK pings every 180s)")
	fs.StringVar(&c.ReadLoop, prefix+"read-loop", defaultReadLoop, "own channel: how idle device connections are read: epoll (Linux; no goroutine per connection) or goroutine (one each)")
	fs.DurationVar(&c.WriteTimeout, prefix+"write-timeout", DefaultWriteTimeout, "own channel: longest write to a device before it is disconnected (its messages stay cached)")
}
