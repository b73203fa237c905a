// Package vivo owns delivery to vivo push (server API, gateways.md §6): the app's hybrid-push
// credentials (appId, appKey, appSecret per profile), the cached authToken obtained from
// /message/auth with an MD5 sign (renewed hourly, dropped once when vivo refuses it), single
// sends (/message/send) and, for two or more regIds of one rendered message, a saved list
// payload (/message/saveListPayload, once per message) pushed to up to 1000 regIds per
// /message/pushToList request (sender/vendor's Batcher), the mapping of render.VendorBody and
// data.vivo (pushMode, classification, category) to vivo's fields, and the reply table.
//
// vivo has no pass-through messages: push/render fails silent pushes to vivo targets.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package vivo
