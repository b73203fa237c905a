// Package vendor holds what the China vendor senders (sender/hms, sender/mi, ...) share beyond
// sender/gateway: hybrid-push profiles (an app's credentials of one vendor are a JSON object of
// named configurations, `_default` plus the deviceProfile names), the group-commit Batcher that
// turns the pool's one-delivery-per-call Send into requests carrying many registration ids of
// one rendered message, the OAuth2 client-credentials token source (HMS, Honor) and the
// keep-alive HTTP client (HTTP/2 where the gateway offers it through ALPN).
//
// Concurrency: Profiles are read-only after Load; Batcher and TokenSource are safe for
// concurrent use. A Batcher starts no goroutine: the caller whose delivery opens a request
// runs it, and hands the next waiting batch to the first of its callers.
package vendor
