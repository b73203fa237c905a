package sim

import (
	"cmp"
	"crypto/tls"
	"net/http"
	"sync"
	"time"
)

// endpoint is what every gateway simulator shares: its TLS server and its recorder. Each
// simulator embeds it, so the accessors below are one code for all of them.
type endpoint struct {
	srv *tlsServer
	rec *recorder
	// receipts posts the delivery receipts of the vendor simulators that send them
	// (receipts.go); nil for the others.
	receipts *receiptPoster
	// receiptCfg is the receipt configuration per vendor app (HMS, Honor: SetReceipt).
	receiptMu  sync.Mutex
	receiptCfg map[string]ReceiptConfig
}

// SetReceipt configures the receipts of vendor app appID, as its console does (HMS and Honor):
// where they are posted and the callback user and key that sign them. The zero config stops them.
func (e *endpoint) SetReceipt(appID string, c ReceiptConfig) {
	e.receiptMu.Lock()
	defer e.receiptMu.Unlock()
	if e.receiptCfg == nil {
		e.receiptCfg = map[string]ReceiptConfig{}
	}
	e.receiptCfg[appID] = c
}

func (e *endpoint) receiptConfig(appID string) ReceiptConfig {
	e.receiptMu.Lock()
	defer e.receiptMu.Unlock()
	return e.receiptCfg[appID]
}

// URL is the simulator's base URL, https://127.0.0.1:port.
func (e *endpoint) URL() string { return e.srv.url() }

// ClientTLS trusts the simulator's self-signed certificate and offers ALPN h2 (a client that
// speaks HTTP/1.1 only ignores it).
func (e *endpoint) ClientTLS() *tls.Config { return e.srv.clientTLS() }

// CertPEM is the simulator's self-signed certificate, for clients in other processes.
func (e *endpoint) CertPEM() []byte { return e.srv.certPEM }

// Close stops serving and drops open connections.
func (e *endpoint) Close() error {
	err := e.srv.close()
	if e.receipts != nil {
		e.receipts.close()
	}
	return err
}

// Stats returns the counters since start or the last Reset.
func (e *endpoint) Stats() Stats { return e.rec.snapshot(true) }

// Sent returns the recorded accepted requests (see each simulator's Record option).
func (e *endpoint) Sent() []Sent { return e.rec.recorded() }

// answerOutage answers r from the scripted outage in force, if any, and says whether it did:
// the connection dropped, a GOAWAY then goAwayFault, or the phase's status; answer writes the
// simulator's own reply for a Fault.
func (e *endpoint) answerOutage(w http.ResponseWriter, r *http.Request, goAwayFault Fault, answer func(Fault)) bool {
	o, ok := e.rec.outage.current()
	if !ok {
		return false
	}
	e.rec.outageHit()
	switch o.Mode {
	case OutageDrop:
		dropConn(r)
	case OutageGoAway:
		goAway(w)
		answer(goAwayFault)
	default:
		answer(Fault{Status: cmp.Or(o.Status, http.StatusServiceUnavailable), Reason: o.Reason, RetryAfter: o.RetryAfter})
	}
	return true
}

// intercept answers r before the simulator looks at it, and says whether it did: from the
// scripted outage in force (answerOutage, with outage for its replies), or, after the pacing and
// latency of f (a request whose client gave up meanwhile is dropped), with f's next injected
// fault (injected writes it).
func (e *endpoint) intercept(w http.ResponseWriter, r *http.Request, f *faults, now time.Time, goAwayFault Fault, outage, injected func(Fault)) bool {
	if e.answerOutage(w, r, goAwayFault, outage) {
		return true
	}
	if !f.wait(r.Context(), now) {
		return true
	}
	if ft, ok := f.take(); ok {
		injected(ft)
		return true
	}
	return false
}
