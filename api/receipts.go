package api

import (
	"context"

	"github.com/valyala/fasthttp"
)

// ReceiptSink applies the delivery receipts vendors post (receipt.Handler): it returns a
// push.Error for a request it refuses, having changed nothing.
type ReceiptSink interface {
	Receive(ctx context.Context, vendor, appID, token string, header func(string) string, body []byte) error
}

// receiptBodyLimit bounds a receipt body: HMS sends at most 1,000 statuses (about 200 KB).
const receiptBodyLimit = 1 << 20

// receiptAnswer is what a receipt taken in is answered: HMS reads errno/errmsg; the others
// read the status only.
var receiptAnswer = []byte(`{"errno":"0","errmsg":"success"}`)

// RegisterReceipts adds POST /receipts/<vendor>/<appId> (HMS and Honor: the URL entered at the
// vendor's console; their receipts are signed) and POST /receipts/<vendor>/<appId>/<token> (the
// URL pushd puts in the requests of the vendors that sign nothing). No app key: the vendor
// authenticates itself (docs/decisions.md, "Receipts in").
func (s *Server) RegisterReceipts(sink ReceiptSink) {
	h := func(ctx *fasthttp.RequestCtx, c *Call) error {
		token := ""
		if len(c.Params) > 2 {
			token = c.Params[2]
		}
		header := func(k string) string { return string(ctx.Request.Header.Peek(k)) }
		if err := sink.Receive(ctx, c.Params[0], c.Params[1], token, header, ctx.PostBody()); err != nil {
			return err
		}
		WriteJSON(ctx, fasthttp.StatusOK, receiptAnswer)
		return nil
	}
	s.Register(Route{Method: "POST", Path: "/receipts/:vendor/:app", Name: "receipts", Auth: AuthNone, MaxBody: receiptBodyLimit}, h)
	s.Register(Route{Method: "POST", Path: "/receipts/:vendor/:app/:token", Name: "receipts", Auth: AuthNone, MaxBody: receiptBodyLimit}, h)
}
