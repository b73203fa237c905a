package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pushd/pushd/api/jsondoc"
	"github.com/pushd/pushd/store"
)

// DropVendorToken implements sender.TokenInvalidator for a vendor_first delivery whose vendor
// called its registrationId dead: the installation is reachable on the own channel (its
// message was just handed there), so it keeps everything but the dead token. Without a
// registrationId it is an own-channel installation (push.Route.DeliveryChannel), its vendor
// field kept for queries; a new token from the SDK makes it hybrid again. The rules are
// InvalidateToken's: a token the installation no longer holds, or one registered again after
// since, is left alone; the dead token is remembered either way. Like the deletion, the
// read-modify-write is not serialised with an API write to the same installation.
func (v invalidator) DropVendorToken(ctx context.Context, appID, objectID, regID string, since time.Time) error {
	if objectID == "" {
		return v.markDead(ctx, appID, regID)
	}
	app, err := v.st.GetApp(ctx, appID)
	if err != nil {
		return fmt.Errorf("cannot read app %s: %w", appID, err)
	}
	inst, err := v.st.GetInstallation(ctx, appID, objectID)
	if errors.Is(err, store.ErrNotFound) {
		return v.markDead(ctx, appID, regID)
	}
	if err != nil {
		return fmt.Errorf("cannot read installation %s of app %s: %w", objectID, appID, err)
	}
	if inst.RegistrationID != regID {
		return nil // rotated since the scan
	}
	if !since.IsZero() && inst.UpdatedAt >= since.Truncate(time.Second).Add(time.Second).UnixMilli() {
		return nil
	}
	doc, err := jsondoc.DecodeObject(inst.Doc)
	if err != nil {
		return fmt.Errorf("cannot decode installation %s of app %s: %w", objectID, appID, err)
	}
	delete(doc, "registrationId")
	if inst.Doc, err = jsondoc.AppendMarshal(nil, doc); err != nil {
		return fmt.Errorf("cannot encode installation %s of app %s: %w", objectID, appID, err)
	}
	inst.RegistrationID = ""
	if err := v.st.PutInstallation(ctx, appID, app.Settings.Buckets, inst); err != nil {
		return fmt.Errorf("cannot drop the dead vendor token of installation %s of app %s: %w", objectID, appID, err)
	}
	return v.markDead(ctx, appID, regID)
}
