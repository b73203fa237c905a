package sender

import (
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
)

// The vendor drivers (hybrid push). Each registered vendor is complete: auth, batching,
// reply table and simulator; a vendor without a driver fails its targets with "channel <x>
// not available".

type hmsDriver struct{ cfg hms.Config }

func (h hmsDriver) load(raw []byte) (credentials, error) {
	c, err := hms.Load(raw)
	if err != nil {
		return nil, err
	}
	return hmsCreds{c, h.cfg}, nil
}

type hmsCreds struct {
	*hms.Credentials
	cfg hms.Config
}

func (h hmsCreds) newClient(route string) (client, error) { return h.NewClient(route, h.cfg) }

type miDriver struct{ cfg mi.Config }

func (m miDriver) load(raw []byte) (credentials, error) {
	c, err := mi.Load(raw)
	if err != nil {
		return nil, err
	}
	return miCreds{c, m.cfg}, nil
}

type miCreds struct {
	*mi.Credentials
	cfg mi.Config
}

func (m miCreds) newClient(route string) (client, error) { return m.NewClient(route, m.cfg) }

type vivoDriver struct{ cfg vivo.Config }

func (v vivoDriver) load(raw []byte) (credentials, error) {
	c, err := vivo.Load(raw)
	if err != nil {
		return nil, err
	}
	return vivoCreds{c, v.cfg}, nil
}

type vivoCreds struct {
	*vivo.Credentials
	cfg vivo.Config
}

func (v vivoCreds) newClient(route string) (client, error) { return v.NewClient(route, v.cfg) }

type oppoDriver struct{ cfg oppo.Config }

func (o oppoDriver) load(raw []byte) (credentials, error) {
	c, err := oppo.Load(raw)
	if err != nil {
		return nil, err
	}
	return oppoCreds{c, o.cfg}, nil
}

type oppoCreds struct {
	*oppo.Credentials
	cfg oppo.Config
}

func (o oppoCreds) newClient(route string) (client, error) { return o.NewClient(route, o.cfg) }

type mzDriver struct{ cfg mz.Config }

func (m mzDriver) load(raw []byte) (credentials, error) {
	c, err := mz.Load(raw)
	if err != nil {
		return nil, err
	}
	return mzCreds{c, m.cfg}, nil
}

type mzCreds struct {
	*mz.Credentials
	cfg mz.Config
}

func (m mzCreds) newClient(route string) (client, error) { return m.NewClient(route, m.cfg) }
