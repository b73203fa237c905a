// Package mz owns delivery to Meizu (Flyme) push (server HTTP API, varnished/pushByPushId):
// the app's hybrid-push credentials (appId and appSecret per profile), the MD5 signature every
// request carries instead of a token (sorted raw parameters plus the secret, gateways.md §5.1),
// form requests carrying up to 100 pushIds of one rendered message (sender/vendor's Batcher),
// the mapping of render.VendorBody and data.mz to Meizu's messageJson, and the reply table:
// a top-level code for the request and a value map naming the failed pushIds by code.
//
// Meizu has no pass-through messages for new apps (restricted since 2018-06-16): push/render
// fails silent pushes to mz targets before they reach this package.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package mz
