package gateway

import (
	"errors"
	"fmt"
	"time"
)

// ConnConfig are the connection settings every HTTP/2 gateway client shares; sender/apns and
// sender/fcm embed it in their Config.
type ConnConfig struct {
	// MaxConns is the most HTTP/2 connections one pool opens (the default is the gateway's: 16
	// for FCM, 4 for the others).
	MaxConns int
	// StreamsPerConn is how many requests one connection carries before the pool opens
	// another (the default is the gateway's: 500 for APNs, 100 for FCM).
	StreamsPerConn int
	// RequestTimeout bounds one request, connection time included (default 30s).
	RequestTimeout time.Duration
	// ReadIdleTimeout: an HTTP/2 PING checks a connection that received no frame for this
	// long (default 15s, as sideshow/apns2); PingTimeout closes it when the PING is unanswered
	// (default 15s).
	ReadIdleTimeout time.Duration
	PingTimeout     time.Duration
	// DialTimeout bounds TCP+TLS connection setup (default 20s).
	DialTimeout time.Duration
}

// DefaultMaxConns is the MaxConns default of a gateway that needs no other.
const DefaultMaxConns = 4

// WithDefaults fills zero fields; maxConns and streams are the gateway's MaxConns and
// StreamsPerConn defaults.
func (c ConnConfig) WithDefaults(maxConns, streams int) ConnConfig {
	if c.MaxConns == 0 {
		c.MaxConns = maxConns
	}
	if c.StreamsPerConn == 0 {
		c.StreamsPerConn = streams
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.ReadIdleTimeout == 0 {
		c.ReadIdleTimeout = 15 * time.Second
	}
	if c.PingTimeout == 0 {
		c.PingTimeout = 15 * time.Second
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 20 * time.Second
	}
	return c
}

// Validate reports settings that cannot work; gateway names the client in the error.
func (c ConnConfig) Validate(gateway string) error {
	if c.MaxConns < 0 || c.StreamsPerConn < 0 {
		return fmt.Errorf("%s: MaxConns and StreamsPerConn must not be negative", gateway)
	}
	if c.RequestTimeout < 0 || c.ReadIdleTimeout < 0 || c.PingTimeout < 0 || c.DialTimeout < 0 {
		return errors.New(gateway + ": timeouts must not be negative")
	}
	return nil
}
