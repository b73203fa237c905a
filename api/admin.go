package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/pushd/pushd/internal/telemetry"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

const routeAdmin = "admin"

func (s *Server) registerAdmin() {
	s.Register(Route{Method: "POST", Path: "/admin/apps", Name: routeAdmin, Auth: AuthAdmin, JSONBody: true, MaxBody: AdminBodyLimit}, s.adminCreateApp)
	s.Register(Route{Method: "GET", Path: "/admin/apps", Name: routeAdmin, Auth: AuthAdmin}, s.adminListApps)
	s.Register(Route{Method: "GET", Path: "/admin/apps/:id", Name: routeAdmin, Auth: AuthAdmin}, s.adminGetApp)
	s.Register(Route{Method: "PUT", Path: "/admin/apps/:id", Name: routeAdmin, Auth: AuthAdmin, JSONBody: true, MaxBody: AdminBodyLimit}, s.adminUpdateApp)
	s.Register(Route{Method: "PUT", Path: "/admin/apps/:id/credentials/:kind", Name: routeAdmin, Auth: AuthAdmin, JSONBody: true}, s.adminPutCredential)
}

// AppRequest is the body of POST and PUT /admin/apps[/<id>]: every field optional.
type AppRequest struct {
	Name     *string          `json:"name"`
	Settings *SettingsRequest `json:"settings"`
	Webhook  *WebhookRequest  `json:"webhook"`
}

// adminCreateRequest is the body of POST /admin/apps: an AppRequest, plus optionally the
// original service's identity to serve the app under (docs/migration.md).
type adminCreateRequest struct {
	Name     *string          `json:"name"`
	Settings *SettingsRequest `json:"settings"`
	Webhook  *WebhookRequest  `json:"webhook"`
	Identity *Identity        `json:"identity"`
}

// SettingsRequest changes some settings; absent fields keep their value.
type SettingsRequest struct {
	ClientPush     *bool         `json:"clientPush"`
	CallsPerMinute *int          `json:"callsPerMinute"`
	DailyVolume    *int64        `json:"dailyVolume"`
	Edition        *push.Edition `json:"edition"`
	Buckets        *int          `json:"buckets"`
	// SenderRates replaces the app's per-channel delivery rates (deliveries/s, cluster-wide):
	// a channel left out is 0 (the nodes' --sender-rates); {} clears them all.
	SenderRates *push.ChannelRates `json:"senderRates"`
	// ChannelPolicy is the app's default channel policy for hybrid Android installations
	// (push/policy.go; a pushd extension): vendor, own_first, vendor_first or own_only.
	ChannelPolicy *string `json:"channelPolicy"`
	// VendorQuotas replaces the app's vendor budgets (push.VendorQuotas; a pushd extension,
	// docs/decisions.md "Vendor quota accounting"): a vendor left out has none; {} clears them.
	VendorQuotas *push.VendorQuotas `json:"vendorQuotas"`
	// MessageClass is the app's default message class (push/class.go; a pushd extension):
	// system or marketing.
	MessageClass *string `json:"messageClass"`
	// Marketing replaces the app's marketing rules (daily cap per device, quiet hours); {}
	// clears them.
	Marketing *push.MarketingRules `json:"marketing"`
}

// AppView is an app as the admin API shows it: no secrets, credential kinds only.
type AppView struct {
	ID          string           `json:"appId"`
	Name        string           `json:"name"`
	Settings    push.AppSettings `json:"settings"`
	Credentials []string         `json:"credentials"`
	Webhook     *WebhookView     `json:"webhook,omitempty"`
	CreatedAt   string           `json:"createdAt"`
	UpdatedAt   string           `json:"updatedAt"`
}

// CreatedApp is the answer to an app creation: the only time the keys are shown.
type CreatedApp struct {
	AppView
	AppKey    string `json:"appKey"`
	MasterKey string `json:"masterKey"`
}

func viewOf(a *push.App) AppView {
	kinds := make([]string, 0, len(a.Credentials))
	for k := range a.Credentials {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return AppView{ID: a.ID, Name: a.Name, Settings: a.Settings, Credentials: kinds, Webhook: viewOfWebhook(a.Webhook),
		CreatedAt: push.FormatTime(a.CreatedAt), UpdatedAt: push.FormatTime(a.UpdatedAt)}
}

func decodeStrict(body []byte, v any) *push.Error {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	m, perr := decodeObject(body)
	if perr != nil {
		return perr
	}
	// encoding/json matches field names without regard to case; the admin API's names are
	// exact, so "NAME" is an unknown field like any other.
	if perr := exactFields(m, reflect.TypeOf(v), ""); perr != nil {
		return perr
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return push.Errorf(push.CodeValidation, "invalid body: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// exactFields checks that every key of m, and of the objects in it that decode into structs,
// is the JSON name of a field of t (a struct or a pointer to one), spelled exactly.
func exactFields(m map[string]any, t reflect.Type, path string) *push.Error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	for k, v := range m {
		f, ok := fieldByJSONName(t, k)
		if !ok {
			return push.Errorf(push.CodeValidation, "invalid body: unknown field %q", path+k)
		}
		if sub, isObj := v.(map[string]any); isObj {
			if perr := exactFields(sub, f.Type, path+k+"."); perr != nil {
				return perr
			}
		}
	}
	return nil
}

func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name || tag == "" && f.Name == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// ApplySettings applies a settings change and validates the result. creating allows the
// bucket count to be set; afterwards it is fixed.
func ApplySettings(cur push.AppSettings, req *SettingsRequest, creating bool) (push.AppSettings, *push.Error) {
	if req == nil {
		return cur, nil
	}
	out := cur
	if req.ClientPush != nil {
		out.ClientPush = *req.ClientPush
	}
	if req.CallsPerMinute != nil {
		out.CallsPerMinute = *req.CallsPerMinute
	}
	if req.DailyVolume != nil {
		out.DailyVolume = *req.DailyVolume
	}
	if req.Edition != nil {
		out.Edition = *req.Edition
	}
	if req.SenderRates != nil {
		out.SenderRates = *req.SenderRates
	}
	if req.VendorQuotas != nil {
		out.VendorQuotas = *req.VendorQuotas
	}
	if req.ChannelPolicy != nil {
		out.ChannelPolicy = *req.ChannelPolicy
		if out.ChannelPolicy == push.PolicyVendor {
			out.ChannelPolicy = "" // the default, stored as such
		}
	}
	if req.MessageClass != nil {
		if !push.ValidMessageClass(*req.MessageClass) {
			return cur, push.Errorf(push.CodeValidation, "messageClass must be %q or %q", push.ClassSystem, push.ClassMarketing)
		}
		out.MessageClass = *req.MessageClass
		if out.MessageClass == push.ClassSystem {
			out.MessageClass = "" // the default, stored as such
		}
	}
	if req.Marketing != nil {
		out.Marketing = *req.Marketing
	}
	if req.Buckets != nil {
		if !creating && *req.Buckets != cur.Buckets {
			return cur, push.Errorf(push.CodeReadOnlyKey, "buckets is fixed when the app is created")
		}
		out.Buckets = *req.Buckets
	}
	switch {
	case out.CallsPerMinute < 1 || out.CallsPerMinute > push.MaxCallsPerMinute:
		return cur, push.Errorf(push.CodeValidation, "callsPerMinute must be 1 to %d", push.MaxCallsPerMinute)
	case out.DailyVolume < 1:
		return cur, push.Errorf(push.CodeValidation, "dailyVolume must be at least 1")
	case out.Edition != push.EditionChina && out.Edition != push.EditionInternational:
		return cur, push.Errorf(push.CodeValidation, "edition must be china or international")
	case out.ChannelPolicy != "" && !push.ValidChannelPolicy(out.ChannelPolicy):
		return cur, push.Errorf(push.CodeValidation, "channelPolicy must be %q, %q, %q or %q", push.PolicyVendor, push.PolicyOwnFirst, push.PolicyVendorFirst, push.PolicyOwnOnly)
	case out.Buckets < 1 || out.Buckets > 65536 || out.Buckets&(out.Buckets-1) != 0:
		return cur, push.Errorf(push.CodeValidation, "buckets must be a power of two from 1 to 65536")
	}
	if perr := checkSenderRates(out.SenderRates); perr != nil {
		return cur, perr
	}
	if perr := checkVendorQuotas(&out.VendorQuotas); perr != nil {
		return cur, perr
	}
	if err := out.Marketing.Validate(); err != nil {
		return cur, push.Errorf(push.CodeValidation, "%s", err.Error())
	}
	return out, nil
}

const keyAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomKey returns n random base62 characters (about 5.95 bits each).
func randomKey(n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(keyAlphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("BUG: crypto/rand failed: " + err.Error())
		}
		b[i] = keyAlphabet[v.Int64()]
	}
	return string(b)
}

// NewApp builds a new app with fresh id and keys: the id is 24 base62 characters, each
// key 32 (190 bits).
func NewApp(name string, settings push.AppSettings, now time.Time) push.App {
	now = now.UTC().Truncate(time.Millisecond)
	return push.App{
		ID:        randomKey(24),
		Name:      name,
		AppKey:    randomKey(32),
		MasterKey: randomKey(32),
		Settings:  settings,
		CreatedAt: now,
		UpdatedAt: now,
	}
}

// CreateApp validates a request and stores a new app (used by the admin API and by
// `pushd app create`).
func CreateApp(ctx context.Context, apps AppStore, req AppRequest, now time.Time) (push.App, *push.Error, error) {
	app, perr := newAppFromRequest(req, now)
	if perr != nil {
		return push.App{}, perr, nil
	}
	if err := apps.CreateApp(ctx, app); err != nil {
		return push.App{}, nil, fmt.Errorf("cannot create app %s: %w", app.ID, err)
	}
	return app, nil, nil
}

// newAppFromRequest validates a creation request's name and settings and builds the app,
// with a fresh id and keys.
func newAppFromRequest(req AppRequest, now time.Time) (push.App, *push.Error) {
	name := ""
	if req.Name != nil {
		name = strings.TrimSpace(*req.Name)
	}
	if name == "" || utf8.RuneCountInString(name) > 128 {
		return push.App{}, push.Errorf(push.CodeValidation, "name is required (1 to 128 characters)")
	}
	settings, perr := ApplySettings(push.DefaultSettings(), req.Settings, true)
	if perr != nil {
		return push.App{}, perr
	}
	hook, perr := applyWebhook(push.AppWebhook{}, req.Webhook)
	if perr != nil {
		return push.App{}, perr
	}
	app := NewApp(name, settings, now)
	app.Webhook = hook
	return app, nil
}

func (s *Server) adminCreateApp(ctx *fasthttp.RequestCtx, c *Call) error {
	var req adminCreateRequest
	if perr := decodeStrict(ctx.PostBody(), &req); perr != nil {
		return perr
	}
	ar := AppRequest{Name: req.Name, Settings: req.Settings, Webhook: req.Webhook}
	var (
		app  push.App
		perr *push.Error
		err  error
	)
	if req.Identity != nil {
		app, perr, err = CreateAppWithIdentity(context.Background(), s.deps.Apps, ar, *req.Identity, c.Now)
	} else {
		app, perr, err = CreateApp(context.Background(), s.deps.Apps, ar, c.Now)
	}
	if perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	s.log.Info("app created", zap.String(telemetry.KeyAppID, app.ID))
	b, _ := json.Marshal(CreatedApp{AppView: viewOf(&app), AppKey: app.AppKey, MasterKey: app.MasterKey})
	ctx.Response.Header.Set("Location", "/admin/apps/"+app.ID)
	WriteJSON(ctx, fasthttp.StatusCreated, b)
	return nil
}

func (s *Server) adminListApps(ctx *fasthttp.RequestCtx, _ *Call) error {
	apps, err := s.deps.Apps.ListApps(context.Background())
	if err != nil {
		return fmt.Errorf("cannot list apps: %w", err)
	}
	views := make([]AppView, len(apps))
	for i := range apps {
		views[i] = viewOf(&apps[i])
	}
	b, _ := json.Marshal(struct {
		Results []AppView `json:"results"`
	}{views})
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

func (s *Server) readApp(id string) (push.App, error) {
	app, err := s.deps.Apps.GetApp(context.Background(), id)
	if errors.Is(err, store.ErrNotFound) {
		return app, push.Errorf(push.CodeObjectNotFound, "app %q not found", clipID(id))
	}
	if err != nil {
		return app, fmt.Errorf("cannot read app %s: %w", clipID(id), err)
	}
	return app, nil
}

func (s *Server) adminGetApp(ctx *fasthttp.RequestCtx, c *Call) error {
	app, err := s.readApp(c.Params[0])
	if err != nil {
		return err
	}
	b, _ := json.Marshal(viewOf(&app))
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

func (s *Server) adminUpdateApp(ctx *fasthttp.RequestCtx, c *Call) error {
	var req AppRequest
	if perr := decodeStrict(ctx.PostBody(), &req); perr != nil {
		return perr
	}
	h := s.locks.lock("admin\x00" + c.Params[0])
	defer s.locks.unlock(h)
	app, err := s.readApp(c.Params[0])
	if err != nil {
		return err
	}
	if req.Name != nil {
		name := strings.TrimSpace(*req.Name)
		if name == "" || utf8.RuneCountInString(name) > 128 {
			return push.Errorf(push.CodeValidation, "name must be 1 to 128 characters")
		}
		app.Name = name
	}
	settings, perr := ApplySettings(app.Settings, req.Settings, false)
	if perr != nil {
		return perr
	}
	hook, perr := applyWebhook(app.Webhook, req.Webhook)
	if perr != nil {
		return perr
	}
	app.Settings = settings
	app.Webhook = hook
	app.UpdatedAt = c.Now.UTC().Truncate(time.Millisecond)
	if err := s.deps.Apps.PutApp(context.Background(), app); err != nil {
		return fmt.Errorf("cannot update app %s: %w", app.ID, err)
	}
	s.apps.invalidate(app.ID)
	s.log.Info("app updated", zap.String(telemetry.KeyAppID, app.ID))
	b, _ := json.Marshal(viewOf(&app))
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

// adminPutCredential is PUT /admin/apps/<id>/credentials/<kind>: the body goes to the
// validator registered for kind; the stored credential is never returned.
func (s *Server) adminPutCredential(ctx *fasthttp.RequestCtx, c *Call) error {
	id, kind := c.Params[0], c.Params[1]
	validate, ok := s.deps.CredentialValidators[kind]
	if !ok {
		kinds := make([]string, 0, len(s.deps.CredentialValidators))
		for k := range s.deps.CredentialValidators {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		return push.Errorf(push.CodeValidation, "unsupported credential kind %q (supported: %s)", clipID(kind), strings.Join(kinds, ", "))
	}
	if _, perr := decodeObject(ctx.PostBody()); perr != nil {
		return perr
	}
	body := slices.Clone(ctx.PostBody())
	h := s.locks.lock("admin\x00" + id)
	defer s.locks.unlock(h)
	app, err := s.readApp(id)
	if err != nil {
		return err
	}
	stored, err := validate(context.Background(), app.ID, body)
	if err != nil {
		if pe := asPushError(err); pe != nil {
			return pe
		}
		return push.Errorf(push.CodeValidation, "invalid %s credential: %v", kind, err)
	}
	if !json.Valid(stored) {
		return fmt.Errorf("cannot store %s credential of app %s: its validator returned non-JSON bytes", kind, app.ID)
	}
	if app.Credentials == nil {
		app.Credentials = map[string]json.RawMessage{}
	}
	app.Credentials[kind] = json.RawMessage(stored)
	app.UpdatedAt = c.Now.UTC().Truncate(time.Millisecond)
	if err := s.deps.Apps.PutApp(context.Background(), app); err != nil {
		return fmt.Errorf("cannot store %s credential of app %s: %w", kind, app.ID, err)
	}
	s.apps.invalidate(app.ID)
	s.log.Info("app credential updated", zap.String(telemetry.KeyAppID, app.ID), zap.String(telemetry.KeyVendor, kind))
	b, _ := json.Marshal(struct {
		Kind      string `json:"kind"`
		UpdatedAt string `json:"updatedAt"`
	}{kind, push.FormatTime(app.UpdatedAt)})
	WriteJSON(ctx, fasthttp.StatusOK, b)
	return nil
}

// maxSenderRate bounds a configured rate: far above any gateway's published per-app limit, so
// a typo of extra digits is refused rather than read as "unlimited in practice".
const maxSenderRate = 1_000_000

// checkSenderRates refuses a rate that is negative, not finite or above maxSenderRate.
func checkSenderRates(rates push.ChannelRates) *push.Error {
	var perr *push.Error
	rates.Each(func(ch string, r float64) {
		if perr == nil && (math.IsNaN(r) || r < 0 || r > maxSenderRate) {
			perr = push.Errorf(push.CodeValidation, "senderRates.%s must be 0 (the nodes' default) to %d deliveries per second", ch, maxSenderRate)
		}
	})
	return perr
}
