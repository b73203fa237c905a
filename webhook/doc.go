// Package webhook sends per-device delivery events (sent, arrived, failed, expired, deferred)
// to each app's webhook: batched (up to Config.BatchSize events or Config.FlushEvery), signed
// with the app's secret (Sign, Verify), retried with exponential backoff until the receiver
// answers 2xx. Events are held in memory between the emitters (fan-out, the own-channel
// gateway) and the receiver, in a bounded buffer: Emit never blocks, and an event that does
// not fit is counted (pushd_webhook_events_dropped_total) and logged, not waited for. Events
// still held when the process stops are lost (docs/decisions.md, "Receipts out").
package webhook
