package sender

import (
	"context"

	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/fcm"
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

type apnsDriver struct{ cfg apns.Config }

func (a apnsDriver) load(raw []byte) (credentials, error) {
	c, err := apns.Load(raw)
	if err != nil {
		return nil, err
	}
	return apnsCreds{c, a.cfg}, nil
}

type apnsCreds struct {
	*apns.Credentials
	cfg apns.Config
}

func (a apnsCreds) newClient(route string) (client, error) { return a.NewClient(route, a.cfg) }

type fcmDriver struct{ cfg fcm.Config }

func (f fcmDriver) load(raw []byte) (credentials, error) {
	c, err := fcm.Load(raw)
	if err != nil {
		return nil, err
	}
	return fcmCreds{c, f.cfg}, nil
}

type fcmCreds struct {
	*fcm.Credentials
	cfg fcm.Config
}

func (f fcmCreds) newClient(route string) (client, error) { return f.NewClient(route, f.cfg) }
