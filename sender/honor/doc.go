// Package honor owns delivery to Honor Push (Honor's own push service since its split from
// Huawei; server API "sendMessage"): the app's hybrid-push credentials (an appId, clientId
// and clientSecret per profile), the OAuth2 client-credentials token of each profile
// (sender/vendor's TokenSource: cached, renewed before expiry, dropped and obtained again once
// on an auth error), requests carrying up to 1000 tokens of one rendered message (sender/
// vendor's Batcher), the mapping of render.VendorBody to the Honor message, and the table
// mapping Honor result codes to outcomes, per token where the reply lists failed or expired
// tokens. Which facts of Honor's API are confirmed, and by what, is in docs/vendors.md.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package honor
