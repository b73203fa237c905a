package direct

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/pushd/pushd/store"
)

// Registry is where a cluster's gateway nodes advertise themselves (store.Store implements
// it; the routers read it).
type Registry interface {
	PutGateway(ctx context.Context, g store.Gateway) error
	DeleteGateway(ctx context.Context, node string) error
}

// DefaultAdvertiseTTL is how long an advertisement lasts without a heartbeat: a node that
// died stops being routed to after it. A node advertises again every third of it, and at
// once when its partitions change.
const DefaultAdvertiseTTL = 15 * time.Second

// Advertiser keeps a gateway node's advertisement in the registry while it runs: its connect
// URL and the push.direct partitions its core owns. On stop it removes it, so the routers
// stop sending devices there before the node's consumer leaves the group (cmd/pushd stops the
// advertiser first).
type Advertiser struct {
	core *Core
	reg  Registry
	node string
	url  string
	ttl  time.Duration
	log  *zap.Logger
	now  func() time.Time
}

// NewAdvertiser builds the advertiser of node, whose devices connect at url.
func NewAdvertiser(core *Core, reg Registry, node, url string, ttl time.Duration, log *zap.Logger) *Advertiser {
	if ttl <= 0 {
		ttl = DefaultAdvertiseTTL
	}
	return &Advertiser{core: core, reg: reg, node: node, url: url, ttl: ttl, log: log.Named("direct"), now: time.Now}
}

// Run advertises until ctx ends, then removes the advertisement.
func (a *Advertiser) Run(ctx context.Context) error {
	tick := time.NewTicker(a.ttl / 3)
	defer tick.Stop()
	for {
		g := store.Gateway{Node: a.node, URL: a.url, Partitions: a.core.Owned(), Expires: a.now().Add(a.ttl)}
		if err := a.reg.PutGateway(ctx, g); err != nil && ctx.Err() == nil {
			a.log.Warn("cannot advertise this gateway node", zap.String("node", a.node), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := a.reg.DeleteGateway(dctx, a.node); err != nil {
				a.log.Warn("cannot remove this gateway node's advertisement; it expires by itself", zap.String("node", a.node), zap.Error(err))
			}
			return nil
		case <-a.core.Changed():
		case <-tick.C:
		}
	}
}
