// Package mi owns delivery to Xiaomi (Mi) push (server HTTP API, /v3/message/regid): the app's
// hybrid-push credentials (AppSecret and package name per profile; the secret is sent as
// `Authorization: key=<secret>` on every request, there is no token exchange), form requests
// carrying up to 1000 regIds of one rendered message (sender/vendor's Batcher), the mapping of
// render.VendorBody to Xiaomi's fields, and the reply table.
//
// Xiaomi reports no per-regId outcome in the send reply (invalid regIds only reach receipt
// callbacks), so this driver never drops a token.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package mi
