// Package oppo owns delivery to OPPO (HeyTap) push (server API, gateways.md §7): the app's
// hybrid-push credentials (appKey and masterSecret per profile), the cached auth_token from
// /server/v1/auth with its SHA-256 sign (renewed hourly, dropped once when OPPO refuses it),
// unicast for one regId and unicast_batch for up to 1000 regIds of one rendered message
// (sender/vendor's Batcher; the notification is rendered once per request and repeated per
// target), routing by the regId's region (China or overseas host), the mapping of
// render.VendorBody and data.oppo (category, notify_level) to OPPO's fields, and the reply
// table, per request and per batch item.
//
// OPPO has no pass-through messages: push/render fails silent pushes to OPPO targets.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package oppo
