// Package fcm owns delivery to Firebase Cloud Messaging HTTP v1: the app credentials JSON (a
// Google service account) and its validation, the OAuth2 service-account token flow (an RS256
// JWT assertion exchanged at token_uri for an access token, cached and refreshed by one caller
// at a time), the HTTP/2 connections of one app, splicing each target's token into the message
// rendered once per push, and the table mapping Google's error replies to outcomes.
//
// Concurrency: Credentials and Client are safe for concurrent use. The access token of an app
// is shared by every connection; a refresh runs once however many requests need it.
package fcm
