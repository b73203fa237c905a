// Package receipt takes in the delivery receipts of the vendor channels (issue 20 item 5):
// Xiaomi, Huawei (HMS), Honor, vivo, OPPO and Meizu post them to pushd's API
// (POST /receipts/<vendor>/<appId>[/<token>]). It owns what the senders put in a request so that
// its receipt comes back to pushd (callback.go: the callback URL with the app's receipt token,
// the parameter naming the push record), how each vendor's receipt body reads (parse.go), how
// each is authenticated (auth.go), and what a receipt does (handler.go): an arrival counted once
// per (push, device) on the record (store.Store.CountReceipts), the webhook's arrived event,
// and an "uninstalled" or "invalid token" status through the same ratio-guarded cleanup as a
// dead-token answer (guard.go). The Handler is safe for concurrent use.
package receipt
