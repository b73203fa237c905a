// Package api owns the REST front of pushd: the fasthttp server and its small router,
// authentication (app key, master key, signed requests, the admin bearer token), request
// limits (content type, body size), the {code, error} responses and their HTTP statuses,
// the installation and admin handlers, the ops endpoints (/metrics, /healthz, /readyz) and
// the inactivity sweeper service.
//
// Other handlers (api/pushapi: push, notifications, scheduled pushes) add their routes with
// Server.Register before Run; they get the authenticated app in Call and answer with
// WriteJSON or by returning a *push.Error. Handlers receive a *Call that is valid only during the
// request; nothing derived from *fasthttp.RequestCtx outlives its handler.
//
// Concurrency: a Server serves many requests at once. Writes to one installation (by
// objectId) and to one device id are serialised inside this process by a striped mutex;
// running several API nodes against one shared store loses that guarantee (see
// docs/decisions.md, "Installations and auth").
package api
