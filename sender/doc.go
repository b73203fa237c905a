// Package sender owns delivery to the push gateways: the Dispatcher routes each delivery to a
// pool per (channel, app, credential, environment), created on first use and closed when idle.
// A pool bounds its in-flight requests with a fixed set of workers pulling from a bounded
// queue, limits its rate with a token bucket, retries transient failures with exponential
// backoff and jitter (honouring Retry-After) until the delivery expires or its retry horizon
// ends, parks its deliveries behind one probe at a time while its gateway is down (outage.go),
// deletes installations whose token the gateway reports dead, and stops (breaker) when the
// gateway rejects the app's credentials.
// The gateway protocols live in sender/apns and sender/fcm; sender/gateway holds what they
// share with the pools.
//
// Concurrency: Dispatcher.Send is safe for concurrent use and blocks until every delivery of
// its batch has its final result, its context ends or the dispatcher closes. After Send
// returns, nothing writes to its result slice. No goroutine is started per delivery.
package sender
