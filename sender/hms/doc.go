// Package hms owns delivery to Huawei HMS Push Kit (server API v1): the app's hybrid-push
// credentials (an AppId and AppSecret per profile), the OAuth2 client-credentials token of
// each profile (cached, renewed before expiry, dropped and obtained again once on an auth
// error), requests carrying up to 1000 tokens of one rendered message (sender/vendor's
// Batcher), the mapping of render.VendorBody to the HMS message, and the table mapping HMS
// result codes to outcomes, per token for partial successes.
//
// Concurrency: Credentials and Client are safe for concurrent use.
package hms
