// Package h2 is a lean HTTP/2 client connection for the gateway senders, below net/http:
// golang.org/x/net/http2's Framer and hpack over one TLS connection (ALPN h2), no request or
// response objects and no goroutine per request.
//
// A request is a header block the caller encoded once (Block, stateless hpack: no dynamic
// table, so the bytes are valid on any stream of any connection) plus a :path encoded per
// stream and a body shared across targets. One writer goroutine per connection starts streams
// in order, within the server's SETTINGS_MAX_CONCURRENT_STREAMS and flow-control windows, and
// flushes its buffered writer only when nothing more is queued, so a burst of requests costs
// few syscalls. One reader goroutine parses responses into the stream's reused state: :status,
// retry-after and a short body (kept only for statuses other than 200). It parses an answer's
// frames (HEADERS, CONTINUATION, DATA) itself, in place in its read buffer, and leaves the
// others to the Framer (frame.go), so the frames allocate nothing; hpack still makes a string
// of each literal header value it decodes (APNs's apns-id: one per answer). The socket under TLS
// is an internal/rawtcp connection: its reads and writes do not wake the runtime's sysmon.
//
// "Was it processed" is exact: Do returns an error matching ErrNotProcessed when the server
// cannot have acted on the request (a stream above a GOAWAY's last-stream-id, RST_STREAM
// REFUSED_STREAM, a connection that failed or went away before the request was handed to
// the socket), and ErrConnLost or a *StreamError when it may have.
//
// Concurrency: a Conn is safe for concurrent use; Do blocks its caller until the response,
// an error or the context's end.
package h2
