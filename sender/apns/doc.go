// Package apns owns delivery to Apple's APNs provider API: the app credentials JSON
// (token-auth team keys and TLS certificates) and its validation, the choice of credential,
// environment, topic and team for a delivery, the HTTP/2 connections of one route, and the
// table mapping APNs replies to outcomes. Requests go over sender/h2 (header blocks encoded once
// per push and shared by its targets); JWTs are signed with sideshow/apns2's token package.
//
// Concurrency: Credentials and Client are safe for concurrent use. A Client holds at most
// Config.MaxConns connections; the JWT of a team is generated once and shared by every
// connection of every route of that team (Apple wants one token per team).
package apns
