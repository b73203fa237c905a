// Package sim owns the local gateway simulators: an APNs provider API and an FCM HTTP v1 API
// (with its OAuth2 token endpoint), each served over HTTP/2 with TLS on loopback. They check
// requests the way the real gateways do (docs: /work/shared/gateways.md §1.7, §2.5, §8), answer
// with the real status codes and error bodies, and count what they accepted per device token so
// tests and the load test can prove each target got exactly the pushes it should.
//
// Concurrency: every exported method of APNs and FCM is safe for concurrent use, including
// while requests are being served. Configuration is read once by the constructor; the only
// runtime changes are the explicit ones (AddKey, MarkUnregistered, Inject, Reset, ...).
package sim
