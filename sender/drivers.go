package sender

import (
	"context"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/gateway"
)

// driver is one gateway implementation as the dispatcher sees it.
type driver interface {
	// load parses an app's credentials for the channel (App.Credentials[channel]).
	load(raw []byte) (credentials, error)
}

// credentials are an app's parsed credentials of one channel.
type credentials interface {
	// Route names the credential and environment serving d (a part of the pool key); an
	// error is d's permanent failure reason.
	Route(d *push.Delivery) (string, error)
	newClient(route string) (client, error)
}

// client sends over one route's connections.
type client interface {
	Send(ctx context.Context, d *push.Delivery) gateway.Reply
	Close()
}

// gatewayCredentials is what every gateway package's *Credentials offers: the route of a
// delivery, and a client for a route.
type gatewayCredentials[Cfg any, Cl client] interface {
	Route(d *push.Delivery) (string, error)
	NewClient(route string, cfg Cfg) (Cl, error)
}

// gatewayDriver adapts a gateway package (its Load, Config and Credentials) to driver: every
// gateway (apns, fcm and the vendors) has the same file set and the same three entry points.
type gatewayDriver[Cfg any, Cl client, C gatewayCredentials[Cfg, Cl]] struct {
	cfg   Cfg
	parse func(raw []byte) (C, error)
}

func newDriver[Cfg any, Cl client, C gatewayCredentials[Cfg, Cl]](cfg Cfg, parse func([]byte) (C, error)) driver {
	return gatewayDriver[Cfg, Cl, C]{cfg: cfg, parse: parse}
}

func (d gatewayDriver[Cfg, Cl, C]) load(raw []byte) (credentials, error) {
	c, err := d.parse(raw)
	if err != nil {
		return nil, err
	}
	return boundCredentials[Cfg, Cl, C]{c: c, cfg: d.cfg}, nil
}

// boundCredentials are an app's parsed credentials with the process-wide config of their gateway.
type boundCredentials[Cfg any, Cl client, C gatewayCredentials[Cfg, Cl]] struct {
	c   C
	cfg Cfg
}

func (b boundCredentials[Cfg, Cl, C]) Route(d *push.Delivery) (string, error) { return b.c.Route(d) }

func (b boundCredentials[Cfg, Cl, C]) newClient(route string) (client, error) {
	cl, err := b.c.NewClient(route, b.cfg)
	if err != nil {
		return nil, err // not cl: a nil *Client in a client interface is not nil
	}
	return cl, nil
}
