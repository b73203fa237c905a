package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/store"
)

// Identity is an app id and its two keys given rather than drawn: the original service's,
// so that the app ids and keys compiled into installed apps keep working against pushd
// (docs/migration.md, "Identity and SDKs").
type Identity struct {
	AppID     string `json:"appId"`
	AppKey    string `json:"appKey"`
	MasterKey string `json:"masterKey"`
}

// The original's shapes, as its SDKs and public samples show them: an app id is 24 base62
// characters, followed since the regions were split by "-" and an 8-character region suffix
// (-gzGzoHsz north China, -9Nh9j0Va east China, -MdYXbMMI international: the JavaScript SDK
// tells the international region by that suffix, init.js isCNApp); the oldest apps have no
// suffix. App key and master key are 24 base62 characters each (the REST guide's signing
// example: UtOCzqb67d3sN12Kts4URwy8, DyJegPlemooo4X1tg94gQkw1).
var (
	originalAppID = regexp.MustCompile(`^[0-9A-Za-z]{24}(-[0-9A-Za-z]{8})?$`)
	originalKey   = regexp.MustCompile(`^[0-9A-Za-z]{24}$`)
)

// Validate refuses an identity that is not of the original's shape, saying which part is
// wrong; it never repeats a key.
func (id Identity) Validate() *push.Error {
	switch {
	case !originalAppID.MatchString(id.AppID):
		return push.Errorf(push.CodeValidation,
			"app id %q is not an id of the original service: want 24 letters and digits, optionally followed by - and an 8-character region suffix (e.g. -gzGzoHsz)", clipID(id.AppID))
	case !originalKey.MatchString(id.AppKey):
		return push.Errorf(push.CodeValidation, "the app key is not a key of the original service: want 24 letters and digits (got %d characters)", utf8.RuneCountInString(id.AppKey))
	case !originalKey.MatchString(id.MasterKey):
		return push.Errorf(push.CodeValidation, "the master key is not a key of the original service: want 24 letters and digits (got %d characters)", utf8.RuneCountInString(id.MasterKey))
	case id.AppKey == id.MasterKey:
		return push.Errorf(push.CodeValidation, "the app key and the master key must differ: the master key bypasses every permission")
	}
	return nil
}

// CreateAppWithIdentity validates a request and an identity and stores a new app that
// answers to that id and those keys. An id already in use is 137: an app is never
// overwritten (its installations would change hands).
func CreateAppWithIdentity(ctx context.Context, apps AppStore, req AppRequest, id Identity, now time.Time) (push.App, *push.Error, error) {
	if perr := id.Validate(); perr != nil {
		return push.App{}, perr, nil
	}
	app, perr := newAppFromRequest(req, now)
	if perr != nil {
		return push.App{}, perr, nil
	}
	app.ID, app.AppKey, app.MasterKey = id.AppID, id.AppKey, id.MasterKey
	if err := apps.CreateApp(ctx, app); err != nil {
		if errors.Is(err, store.ErrExists) {
			return push.App{}, push.Errorf(push.CodeDuplicateValue, "app %s already exists", app.ID), nil
		}
		return push.App{}, nil, fmt.Errorf("cannot create app %s: %w", app.ID, err)
	}
	return app, nil, nil
}
