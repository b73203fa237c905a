package api

import (
	"context"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/pushd/pushd/push"
)

// InstallationImporter loads the rows of an export into an app through the store's bulk path
// (cmd/pushd wires package migrate). format is "" (detect), "jsonl", "results" or "array".
type InstallationImporter interface {
	ImportInstallations(ctx context.Context, app push.App, body []byte, format string) (*ImportReport, error)
}

func (s *Server) registerAdminImport() {
	// The body is bounded by the server-wide cap (DefaultMaxBodyBytes): a large export goes
	// in several requests, or through pushd import with the server stopped.
	s.Register(Route{Method: "POST", Path: "/admin/apps/:id/installations/import", Name: routeAdmin, Auth: AuthAdmin}, s.adminImport)
}

// adminImport is POST /admin/apps/<id>/installations/import: the body is an export (JSON
// lines, {"results":[...]} or an array; ?format= to say which) loaded as pushd import loads a
// file; the answer is the ImportReport. Rows are validated as POST /1.1/installations bodies.
func (s *Server) adminImport(ctx *fasthttp.RequestCtx, c *Call) error {
	if s.deps.Importer == nil {
		return push.Errorf(push.CodeUnavailable, "this store has no bulk import: use pushd import on the embedded store")
	}
	format := string(ctx.QueryArgs().Peek("format"))
	switch format {
	case "", "jsonl", "results", "array":
	default:
		return push.Errorf(push.CodeValidation, "format %q: want jsonl, results or array", format)
	}
	app, err := s.readApp(c.Params[0])
	if err != nil {
		return err
	}
	body := append([]byte(nil), ctx.PostBody()...) // fasthttp reuses its buffer
	rep, err := s.deps.Importer.ImportInstallations(context.Background(), app, body, format)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(rep)
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}
