package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Xiaomi receipt types (extra.callback.type, gateways.md §4.2): 1 delivered, 2 clicked, 3 both,
// 16 invalid targets (Xiaomi's replacement of the retired invalid-regId feedback API).
const (
	MiReceiptDelivered = 1
	MiReceiptInvalid   = 16
)

// MiReceipt is one receipt the simulator POSTs to a request's extra.callback.
type MiReceipt struct {
	MsgID   string
	Param   string   // extra.callback.param
	Type    int      // MiReceiptDelivered or MiReceiptInvalid
	Targets []string // the regIds it is about
	At      time.Time
}

// MiReceiptBody encodes a receipt as the POST body and its content type. The real format is
// unconfirmed (gateways.md §9); DefaultMiReceiptBody is what the public SDK documentation
// describes: a form field data = {"<msgId>": {"param", "type", "targets" (comma-joined),
// "barStatus", "timestamp"}}.
type MiReceiptBody func(MiReceipt) (body []byte, contentType string)

// DefaultMiReceiptBody is the simulator's receipt format [unconfirmed].
func DefaultMiReceiptBody(r MiReceipt) ([]byte, string) {
	data, _ := json.Marshal(map[string]any{r.MsgID: map[string]any{
		"param": r.Param, "type": r.Type, "targets": strings.Join(r.Targets, ","),
		"barStatus": "Enable", "timestamp": r.At.UnixMilli(),
	}})
	return []byte(url.Values{"data": {string(data)}}.Encode()), "application/x-www-form-urlencoded"
}

// miMaxReceipts bounds the receipts waiting to be posted; beyond it they are dropped (counted
// in Stats.ByReason["receipt_dropped"]), as a gateway drops receipts to a slow receiver.
const miMaxReceipts = 1024

// miReceipts posts receipts from one goroutine, owned by the simulator: started by NewMi and
// stopped (waited for) by Close.
type miReceipts struct {
	body   MiReceiptBody
	hc     *http.Client
	rec    *recorder
	q      chan miReceiptJob
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	posted atomic.Int64
	once   sync.Once
}

type miReceiptJob struct {
	url string
	r   MiReceipt
}

func newMiReceipts(body MiReceiptBody, rec *recorder) *miReceipts {
	if body == nil {
		body = DefaultMiReceiptBody
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &miReceipts{body: body, hc: &http.Client{Timeout: 5 * time.Second}, rec: rec,
		q: make(chan miReceiptJob, miMaxReceipts), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go m.run()
	return m
}

func (m *miReceipts) run() {
	defer close(m.done)
	for {
		select {
		case <-m.ctx.Done():
			return
		case j := <-m.q:
			body, ct := m.body(j.r)
			req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, j.url, strings.NewReader(string(body)))
			if err != nil {
				m.count("receipt_failed")
				continue
			}
			req.Header.Set("Content-Type", ct)
			res, err := m.hc.Do(req)
			if err != nil {
				m.count("receipt_failed")
				continue
			}
			_ = res.Body.Close()
			m.posted.Add(1)
			m.count("receipt_" + strconv.Itoa(j.r.Type))
		}
	}
}

func (m *miReceipts) count(reason string) {
	m.rec.mu.Lock()
	m.rec.st.ByReason[reason]++
	m.rec.mu.Unlock()
}

// add queues the receipts of one accepted request: delivered for the good regIds when the
// callback type asks for it (1 or 3; 2, clicks, never happens here), invalid for the others
// when it has bit 16. Without a callback.type Xiaomi's default is taken as 3 [unconfirmed].
func (m *miReceipts) add(f url.Values, msgID string, good, bad []string, now time.Time) {
	cb := f.Get("extra.callback")
	if cb == "" {
		return
	}
	typ := 3
	if v := f.Get("extra.callback.type"); v != "" {
		typ, _ = strconv.Atoi(v)
	}
	param := f.Get("extra.callback.param")
	for _, r := range []MiReceipt{
		{Type: MiReceiptDelivered, Targets: good},
		{Type: MiReceiptInvalid, Targets: bad},
	} {
		if len(r.Targets) == 0 || typ&r.Type == 0 {
			continue
		}
		r.MsgID, r.Param, r.At = msgID, param, now
		select {
		case m.q <- miReceiptJob{url: cb, r: r}:
		default:
			m.count("receipt_dropped")
		}
	}
}

// close stops posting (queued receipts are dropped) and waits for the poster.
func (m *miReceipts) close() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
	})
}
