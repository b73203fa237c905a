package sim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Receipts of the vendors other than Xiaomi (mi_receipts.go): each simulator posts them, like its
// vendor, asynchronously after the request was answered, to the callback the request named
// (vivo, OPPO, Meizu) or to the receipt configuration of the vendor app (HMS, Honor: what the
// operator enters at the vendor's console, SetReceipt). One poster goroutine per simulator,
// started on the first receipt and stopped (waited for) by Close; at most maxReceipts wait, the
// rest are dropped and counted in Stats.ByReason["receipt_dropped"].

const maxReceipts = 1024

type receiptJob struct {
	url, contentType string
	header           http.Header
	body             []byte
}

type receiptPoster struct {
	rec    *recorder
	hc     *http.Client
	q      chan receiptJob
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// newReceiptPoster starts the poster; close stops it.
func newReceiptPoster(rec *recorder) *receiptPoster {
	ctx, cancel := context.WithCancel(context.Background())
	p := &receiptPoster{rec: rec, hc: &http.Client{Timeout: 30 * time.Second}, q: make(chan receiptJob, maxReceipts),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go p.run()
	return p
}

func (p *receiptPoster) count(reason string) {
	p.rec.mu.Lock()
	p.rec.st.ByReason[reason]++
	p.rec.mu.Unlock()
}

// post queues one receipt without blocking.
func (p *receiptPoster) post(j receiptJob) {
	select {
	case p.q <- j:
	default:
		p.count("receipt_dropped")
	}
}

func (p *receiptPoster) run() {
	defer close(p.done)
	for {
		select {
		case <-p.ctx.Done():
			return
		case j := <-p.q:
			req, err := http.NewRequestWithContext(p.ctx, http.MethodPost, j.url, bytes.NewReader(j.body))
			if err != nil {
				p.count("receipt_failed")
				continue
			}
			for k, v := range j.header {
				req.Header[k] = v
			}
			req.Header.Set("Content-Type", j.contentType)
			res, err := p.hc.Do(req)
			if err != nil {
				p.count("receipt_failed")
				continue
			}
			_ = res.Body.Close()
			if res.StatusCode/100 != 2 {
				p.count("receipt_refused")
				continue
			}
			p.count("receipt_posted")
		}
	}
}

// close stops posting (queued receipts are dropped) and waits for the poster.
func (p *receiptPoster) close() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
	})
}

// ReceiptConfig is a vendor app's receipt configuration as entered at the HMS or Honor console:
// where receipts go, and the callback user name and key that sign them (HeaderHuawei).
type ReceiptConfig struct {
	URL, User, Key string
}

// serveReceipt answers POST /_receipt {"appId","url","user","key"} (SetReceipt; url "" stops
// the app's receipts) of the HMS and Honor simulators; it reports whether the path was it.
func (e *endpoint) serveReceipt(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "/_receipt" {
		return false
	}
	var in struct {
		AppID string `json:"appId"`
		URL   string `json:"url"`
		User  string `json:"user"`
		Key   string `json:"key"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&in) != nil || in.AppID == "" {
		w.WriteHeader(http.StatusBadRequest)
		return true
	}
	e.SetReceipt(in.AppID, ReceiptConfig{URL: in.URL, User: in.User, Key: in.Key})
	w.WriteHeader(http.StatusNoContent)
	return true
}

// huaweiReceipt posts an HMS-shaped receipt (HMS and Honor) of tokens of a request with biTag.
func huaweiReceipt(p *receiptPoster, cfg ReceiptConfig, vendorApp, biTag, requestID string, tokens []string, knobs Knobs, now time.Time) {
	if cfg.URL == "" || biTag == "" || len(tokens) == 0 {
		return
	}
	type status struct {
		BiTag     string `json:"biTag"`
		AppID     string `json:"appid"`
		Token     string `json:"token"`
		Status    int    `json:"status"`
		Timestamp int64  `json:"timestamp"`
		RequestID string `json:"requestId"`
	}
	st := make([]status, 0, len(tokens))
	for _, t := range tokens {
		code := 0
		if ReceiptUninstalled(t, knobs.ReceiptUninstalledRate, knobs.Seed) {
			code = 2 // the app is not installed
		}
		st = append(st, status{BiTag: biTag, AppID: vendorApp, Token: t, Status: code, Timestamp: now.UnixMilli(), RequestID: requestID})
	}
	for len(st) > 0 { // HMS merges at most 1,000 statuses per receipt
		n := min(len(st), 1000)
		body, _ := json.Marshal(map[string]any{"statuses": st[:n]})
		st = st[n:]
		h := http.Header{}
		if cfg.User != "" && cfg.Key != "" {
			var b [16]byte
			_, _ = rand.Read(b[:])
			ts, nonce := strconv.FormatInt(now.UnixMilli(), 10), hex.EncodeToString(b[:])
			m := hmac.New(sha256.New, []byte(cfg.Key))
			m.Write([]byte(ts + nonce + cfg.User))
			h.Set("X-HUAWEI-CALLBACK-ID", "timestamp="+ts+";nonce="+nonce+";value="+base64.StdEncoding.EncodeToString(m.Sum(nil)))
		}
		p.post(receiptJob{url: cfg.URL, contentType: "application/json", header: h, body: body})
	}
}
