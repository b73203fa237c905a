// Package push holds the domain types every role shares: apps, installations and their
// routing fields, push jobs and tasks, delivery targets and outcomes, push records,
// scheduled pushes, and the REST error codes. It does no I/O and holds no state, so every
// value here is safe to share between goroutines once built.
package push
