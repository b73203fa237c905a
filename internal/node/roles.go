package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/pushd/pushd/api"
	"github.com/pushd/pushd/api/limit"
	"github.com/pushd/pushd/api/pushapi"
	"github.com/pushd/pushd/fanout"
	"github.com/pushd/pushd/internal/jointaccept"
	"github.com/pushd/pushd/internal/lease"
	"github.com/pushd/pushd/internal/service"
	"github.com/pushd/pushd/loadtest/sim"
	"github.com/pushd/pushd/push"
	"github.com/pushd/pushd/queue"
	"github.com/pushd/pushd/queue/embedded"
	"github.com/pushd/pushd/queue/kafka"
	"github.com/pushd/pushd/receipt"
	"github.com/pushd/pushd/scheduler"
	"github.com/pushd/pushd/sender"
	"github.com/pushd/pushd/sender/apns"
	"github.com/pushd/pushd/sender/direct"
	"github.com/pushd/pushd/sender/fcm"
	"github.com/pushd/pushd/sender/hms"
	"github.com/pushd/pushd/sender/honor"
	"github.com/pushd/pushd/sender/mi"
	"github.com/pushd/pushd/sender/mz"
	"github.com/pushd/pushd/sender/oppo"
	"github.com/pushd/pushd/sender/vivo"
	"github.com/pushd/pushd/store"
	"github.com/pushd/pushd/store/cassandra"
)

// Checks that the implementations fit what their consumers declare.
var (
	_ fanout.Sender        = (*sender.Dispatcher)(nil)
	_ fanout.Sender        = (*direct.Handoff)(nil)
	_ fanout.Log           = queue.Log(nil)
	_ pushapi.Store        = store.Store(nil)
	_ pushapi.Counter      = (*fanout.Audience)(nil)
	_ fanout.AudienceStore = store.Store(nil)
	_ direct.Cache         = store.Store(nil)
	_ lease.Store          = store.Store(nil)
	_ scheduler.Lease      = (*lease.Keeper)(nil)
)

// openCassandra opens the cluster store and makes sure its tables exist.
func openCassandra(ctx context.Context, p *parts) error {
	st, err := cassandra.Open(p.cfg.Cassandra)
	if err != nil {
		return fmt.Errorf("cannot open store: %w", err)
	}
	if err := st.EnsureTables(ctx); err != nil {
		_ = st.Close()
		return fmt.Errorf("cannot create the Cassandra tables: %w", err)
	}
	p.store = st
	return nil
}

// openQueue opens the durable log and adds a service that closes it on stop, after every
// role that appends or consumes has stopped.
func openQueue(ctx context.Context, p *parts, g *service.Group) error {
	var lg queue.Log
	switch p.cfg.Log {
	case "embedded":
		if p.pebble == nil {
			return errors.New("the embedded log needs --store pebble")
		}
		l, err := embedded.Open(p.pebble.DB(), embedded.Options{
			Logger:       p.log.Named("log"),
			TrimInterval: p.cfg.LogTrimEvery,
			Metrics:      p.reg.Add(metrics.NewSet()),
		})
		if err != nil {
			return fmt.Errorf("cannot open the embedded log: %w", err)
		}
		lg = l
	case "kafka":
		cfg := p.cfg.Kafka
		cfg.Brokers, cfg.Logger, cfg.Dial = p.cfg.KafkaBrokers, p.log.Named("kafka"), p.opts.KafkaDial
		cfg.Metrics = p.reg.Add(metrics.NewSet())
		if err := kafka.EnsureTopics(ctx, cfg); err != nil {
			return fmt.Errorf("cannot create the Kafka topics: %w", err)
		}
		l, err := kafka.New(cfg)
		if err != nil {
			return fmt.Errorf("cannot open the Kafka log: %w", err)
		}
		lg = l
	}
	p.queue = lg
	g.Add("log", service.Func(func(ctx context.Context) error {
		<-ctx.Done()
		if err := lg.Close(); err != nil {
			return fmt.Errorf("cannot close the log: %w", err)
		}
		return nil
	}))
	return nil
}

// addScheduler wires the scheduler role: under the cluster lease "scheduler" it fires due
// scheduled pushes into push.jobs, and re-drives the jobs whose append was lost. The lease's
// keeper starts first and stops last, releasing the lease once this node fires no more.
func addScheduler(p *parts, g *service.Group, _ *Hooks) error {
	set := p.reg.Add(metrics.NewSet())
	k := p.keeper("scheduler", set)
	g.Add("scheduler-lease", k)
	g.Add("scheduler", scheduler.New(scheduler.Config{}, p.store, p.queue, k, p.log, set, nil))
	g.Add("redriver", scheduler.NewRedriver(scheduler.RedriveConfig{After: p.cfg.RedriveAfter}, p.store, p.queue, k, p.log, set, nil))
	return nil
}

// keeper returns the keeper of this node's hold on the named cluster lease; add it to the
// group before the work it gates.
func (p *parts) keeper(name string, set *metrics.Set) *lease.Keeper {
	if p.owner == "" {
		p.owner = lease.Owner()
	}
	return lease.New(name, p.owner, p.cfg.Lease, p.store, p.log, set, nil)
}

// addFanout wires the fanout role: the sender pools, then the planner and the workers (so
// that on stop the workers finish their batches before the pools close).
func addFanout(p *parts, g *service.Group, _ *Hooks) error {
	hooks := p.webhooks(g)
	d, m, err := dispatcher(p)
	if err != nil {
		return err
	}
	d.SetEvents(hooks)
	// A spent vendor quota defers its targets in the store (fanout/quota.go), sent by the
	// re-driver below once the window resets, instead of holding a task for a day.
	d.SetDeferQuota()
	g.Add("sender-membership", m)
	g.Add("sender", d)
	set := p.reg.Add(metrics.NewSet())
	pl, err := fanout.NewPlanner(p.cfg.Planner, p.store, p.queue, p.log, set)
	if err != nil {
		return err
	}
	g.Add("planner", pl)
	if p.cfg.Log == "embedded" && p.pebble != nil {
		// The embedded log lives in the store's own Pebble: the tasks' append or the synced
		// offset commit after a plan makes its record durable too (one fsync per plan fewer).
		pl.SetLogSyncsStore()
	}
	// Own-channel targets go to push.direct, for the gateway role (sender/direct).
	w, err := fanout.NewWorker(p.cfg.Worker, p.store, p.queue, direct.NewHandoff(d, p.queue), p.log, set)
	if err != nil {
		return err
	}
	w.SetEvents(hooks)
	// own_first asks the gateway that owns the device whether it is connected: on one node
	// its own gateway core; in a cluster the connections the owning gateways record, once per
	// batch (docs/decisions.md, "Channel policy").
	var presence fanout.Presence = direct.LocalPresence(func() *direct.Core { return p.core })
	if p.cfg.Log == "kafka" {
		presence = direct.NewPresence(p.store, func() *direct.Core { return p.core })
	}
	w.SetPresence(presence)
	// Dead tokens' installations are deleted once the checkpoint that counts them is durable.
	w.SetInvalidator(invalidator{p.store})
	if p.cfg.Has("api") {
		w.SetIntake(&p.inflight) // the API's requests first (WorkerConfig.BusyTasks)
	}
	pl.SetRunner(w) // a job of one task runs in the planner (PlannerConfig.InlineSingle)
	g.Add("worker", w)
	// Deferred targets are sent once per cluster, under a lease (issue 20 item 2).
	k := p.keeper("deferrals", set)
	g.Add("deferrals-lease", k)
	dr, err := fanout.NewDeferrals(p.cfg.Deferrals, p.store, direct.NewHandoff(d, p.queue), k, p.log, set)
	if err != nil {
		return err
	}
	dr.SetEvents(hooks)
	dr.SetPresence(presence)
	g.Add("deferrals", dr)
	return nil
}

// dispatcher builds the sender pools with the gateway endpoints and trust of the config
// (or of the in-process simulators).
// Its rates are cluster-wide: the membership registers this node among the sending nodes
// in the store, and each pool paces itself at its share.
func dispatcher(p *parts) (*sender.Dispatcher, *sender.Membership, error) {
	cfg := p.cfg.Sender
	tlsCfg, err := gatewayTLS(p.cfg.GatewayCA)
	if err != nil {
		return nil, nil, err
	}
	cfg.APNs.TLS, cfg.FCM.TLS, cfg.HMS.TLS = tlsCfg, tlsCfg, tlsCfg
	cfg.HMS.Endpoint, cfg.HMS.TokenURL = p.cfg.HMSEndpoint, p.cfg.HMSTokenURL
	cfg.Honor.TLS, cfg.Honor.Endpoint, cfg.Honor.TokenURL = tlsCfg, p.cfg.HonorEndpoint, p.cfg.HonorTokenURL
	cfg.Mi.TLS, cfg.Mi.Endpoint = tlsCfg, p.cfg.MiEndpoint
	cfg.Vivo.TLS, cfg.Vivo.Endpoint = tlsCfg, p.cfg.VivoEndpoint
	cfg.Oppo.TLS, cfg.Oppo.Endpoint, cfg.Oppo.IntlEndpoint = tlsCfg, p.cfg.OppoEndpoint, p.cfg.OppoIntlURL
	cfg.Mz.TLS, cfg.Mz.Endpoint = tlsCfg, p.cfg.MzEndpoint
	cfg.Mi.ReceiptURL, cfg.Vivo.ReceiptURL, cfg.Oppo.ReceiptURL, cfg.Mz.ReceiptURL = p.cfg.ReceiptURL, p.cfg.ReceiptURL, p.cfg.ReceiptURL, p.cfg.ReceiptURL
	cfg.APNs.ProdEndpoint, cfg.APNs.DevEndpoint = p.cfg.APNsEndpoint, p.cfg.APNsEndpoint
	cfg.FCM.Endpoint, cfg.FCM.TokenURL = p.cfg.FCMEndpoint, p.cfg.FCMTokenURL
	if p.sims != nil {
		cfg.APNs.TLS = p.sims.apns.ClientTLS()
		cfg.FCM.TLS = p.sims.fcm.ClientTLS()
		cfg.APNs.ProdEndpoint, cfg.APNs.DevEndpoint = p.sims.apns.URL(), p.sims.apns.URL()
		cfg.FCM.Endpoint, cfg.FCM.TokenURL = p.sims.fcm.URL(), p.sims.fcm.TokenURL()
		cfg.HMS.TLS = p.sims.hms.ClientTLS()
		cfg.HMS.Endpoint, cfg.HMS.TokenURL = p.sims.hms.URL(), p.sims.hms.TokenURL()
		cfg.Honor.TLS, cfg.Honor.Endpoint, cfg.Honor.TokenURL = p.sims.honor.ClientTLS(), p.sims.honor.URL(), p.sims.honor.TokenURL()
		// The simulator's quota code is known (Honor's is not): its spent quota parks the app.
		cfg.Honor.QuotaCodes = []string{strconv.Itoa(sim.HonorDefaultQuotaCode)}
		cfg.Mi.TLS, cfg.Mi.Endpoint = p.sims.mi.ClientTLS(), p.sims.mi.URL()
		cfg.Vivo.TLS, cfg.Vivo.Endpoint = p.sims.vivo.ClientTLS(), p.sims.vivo.URL()
		cfg.Oppo.TLS, cfg.Oppo.Endpoint, cfg.Oppo.IntlEndpoint = p.sims.oppo.ClientTLS(), p.sims.oppo.URL(), p.sims.oppo.URL()
		// The simulator's dead-regId codes are known: its dead regIds are deleted like APNs'.
		cfg.Oppo.InvalidRegIDCodes = []int{sim.OppoDefaultInvalidCode, sim.OppoDefaultUnsubscribedCode}
		cfg.Mz.TLS, cfg.Mz.Endpoint = p.sims.mz.ClientTLS(), p.sims.mz.URL()
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if p.owner == "" {
		p.owner = lease.Owner()
	}
	set := p.reg.Add(metrics.NewSet())
	m := sender.NewMembership(p.store, p.owner, cfg.MemberTTL, nil, nil, p.log, set)
	cfg.Share = m.Share
	return sender.New(cfg, p.store, invalidator{p.store}, p.log, set), m, nil
}

// gatewayTLS is the system roots plus the PEM file's, or nil (system roots) without a file.
func gatewayTLS(caFile string) (*tls.Config, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read --gateway-ca: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--gateway-ca %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// invalidator deletes the installation whose token a gateway reported dead and remembers the
// token for push.DeadTokenWindow: the spec's "the token is marked invalid, and all later
// messages to it are dropped". A /1.1/push/devices id with no installation is only
// remembered; fan-out drops later pushes to a remembered id that still has no installation.
type invalidator struct{ st store.Store }

func (v invalidator) InvalidateToken(ctx context.Context, appID, objectID, deviceID string, since time.Time) error {
	app, err := v.st.GetApp(ctx, appID)
	if err != nil {
		return fmt.Errorf("cannot read app %s: %w", appID, err)
	}
	listed := objectID == ""
	if listed {
		// A listed device id: find its installation, if it has one.
		for _, kind := range []push.IDKind{push.KindToken, push.KindRegID} {
			oid, err := v.st.LookupDevice(ctx, appID, kind, deviceID)
			if err == nil {
				objectID = oid
				break
			}
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("cannot look up a dead token of app %s: %w", appID, err)
			}
		}
		if objectID == "" {
			return v.markDead(ctx, appID, deviceID)
		}
	}
	inst, err := v.st.GetInstallation(ctx, appID, objectID)
	if errors.Is(err, store.ErrNotFound) {
		if listed {
			return v.markDead(ctx, appID, deviceID)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot read installation %s of app %s: %w", objectID, appID, err)
	}
	// The installation may have a new token since the scan (FCM and vendor tokens rotate; the
	// old one then answers UNREGISTERED): delete it only while it still has deviceID.
	if !listed && inst.DeviceID() != deviceID {
		return nil
	}
	// APNs says when a token stopped being valid; an installation refreshed since then has
	// registered the token again and keeps it (gateways.md: DROP unless re-registered after).
	// apns2 reads that timestamp to the second: only a refresh in a later second is after it.
	if !since.IsZero() && inst.UpdatedAt >= since.Truncate(time.Second).Add(time.Second).UnixMilli() {
		return nil
	}
	err = v.st.DeleteInstallation(ctx, appID, app.Settings.Buckets, objectID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("cannot delete installation %s of app %s: %w", objectID, appID, err)
	}
	return v.markDead(ctx, appID, deviceID)
}

// markDead remembers deviceID as dead from now on. The window counts from the reply, not from
// APNs's timestamp: that says since when the token has been invalid, which may be long past,
// and a token dead for a long time is exactly the one worth not sending to again.
func (v invalidator) markDead(ctx context.Context, appID, deviceID string) error {
	if err := v.st.MarkDeadToken(ctx, appID, deviceID, time.Now()); err != nil {
		return fmt.Errorf("cannot remember a dead token of app %s: %w", appID, err)
	}
	return nil
}

// credentialValidators check gateway credential uploads of the admin API, by kind.
func credentialValidators() map[string]api.CredentialValidator {
	check := func(parse func([]byte) error) api.CredentialValidator {
		return func(_ context.Context, _ string, raw []byte) ([]byte, error) {
			if err := parse(raw); err != nil {
				return nil, err
			}
			return raw, nil
		}
	}
	v := map[string]api.CredentialValidator{
		"apns": check(apns.ParseCredentials),
		"fcm":  check(fcm.ParseCredentials),
		// Vendors with a driver check their profiles' fields; the others only the shape.
		push.ChannelHMS:  check(hms.ParseCredentials),
		push.ChannelMi:   check(mi.ParseCredentials),
		push.ChannelVivo: check(vivo.ParseCredentials),
		push.ChannelOppo: check(oppo.ParseCredentials),
		push.ChannelMz:   check(mz.ParseCredentials),
		// Honor Push (sender/honor).
		push.ChannelHonor: check(honor.ParseCredentials),
	}
	return v
}

// registerPush adds the push endpoints to the API server. Dry runs count with the fan-out's
// own planner split, scan and routing (fanout.Audience), split as this node's planner would.
func registerPush(p *parts, srv *api.Server, set *metrics.Set) error {
	aud, err := fanout.NewAudience(p.cfg.Planner, p.store)
	if err != nil {
		return err
	}
	// The embedded store and log share a database: a push is written whole, record and job in
	// one synced commit (internal/jointaccept).
	var joint pushapi.JointAccepter
	if lg, ok := p.queue.(*embedded.Log); ok && p.pebble != nil {
		if joint, err = jointaccept.New(p.pebble, lg); err != nil {
			return err
		}
	}
	pushapi.New(pushapi.Deps{
		Joint:   joint,
		Store:   p.store,
		Log:     p.queue,
		Limiter: limit.New(p.store, nil, set), // counts shared by every API node over the store
		Logger:  p.log,
		Metrics: set,
		// The embedded log lives in the store's own Pebble: its synced append makes the push
		// record written just before it durable too (one fsync per push instead of two).
		LogSyncsStore: p.cfg.Log == "embedded" && p.pebble != nil,
		Counter:       aud,
		DryRun:        p.cfg.DryRun,
	}).Register(srv)
	return nil
}

// sims are the in-process gateway simulators of --sim.
type sims struct {
	apns *sim.APNs
	fcm  *sim.FCM
	hms  *sim.HMS
	mi   *sim.Mi
	vivo *sim.Vivo
	oppo *sim.Oppo
	mz   *sim.Mz

	honor *sim.Honor
}

// Names the dev app's simulated credentials use.
const (
	simKeyID   = "DEVKEY0001"
	simTeamID  = "DEVTEAM001"
	simTopic   = "com.example.pushd"
	simProject = "pushd-dev"
	simHMSApp  = "10086001"
	simVivoApp = "10004"
	// simHonorApp is the dev app's Honor app id.
	simHonorApp = "10086002"
)

// startSims starts the simulators, gives the dev app credentials they trust (new keys each
// start: the simulators keep nothing), and adds a service that stops them.
// simRecord is how many accepted requests each simulator of --sim keeps for GET <url>/_sent
// (the payloads and the notification ids a developer, or an e2e test, can read back).
const simRecord = 1000

func startSims(ctx context.Context, p *parts, g *service.Group, stdout io.Writer) error {
	// Each simulator started so far is closed again if a later one cannot start.
	var started []io.Closer
	closeAll := func() error {
		errs := make([]error, 0, len(started))
		for _, c := range started {
			errs = append(errs, c.Close())
		}
		return errors.Join(errs...)
	}
	start := func(name, addr string, s io.Closer, err error) error {
		if err != nil {
			_ = closeAll()
			return fmt.Errorf("cannot start the %s simulator on %s: %w", name, addr, err)
		}
		started = append(started, s)
		return nil
	}
	receiptKnobs := sim.Knobs{ReceiptUninstalledRate: p.cfg.SimReceiptUninstalled}
	a, err := sim.NewAPNs(sim.APNsConfig{Addr: p.cfg.SimAPNsAddr, Record: simRecord})
	if err := start("APNs", p.cfg.SimAPNsAddr, a, err); err != nil {
		return err
	}
	f, err := sim.NewFCM(sim.FCMConfig{Addr: p.cfg.SimFCMAddr, Record: simRecord})
	if err := start("FCM", p.cfg.SimFCMAddr, f, err); err != nil {
		return err
	}
	h, err := sim.NewHMS(sim.HMSConfig{Addr: p.cfg.SimHMSAddr, Record: simRecord, Knobs: receiptKnobs})
	if err := start("HMS", p.cfg.SimHMSAddr, h, err); err != nil {
		return err
	}
	m, err := sim.NewMi(sim.MiConfig{Addr: p.cfg.SimMiAddr, Record: simRecord, Knobs: receiptKnobs})
	if err := start("Xiaomi", p.cfg.SimMiAddr, m, err); err != nil {
		return err
	}
	v, err := sim.NewVivo(sim.VivoConfig{Addr: p.cfg.SimVivoAddr, Record: simRecord, Knobs: receiptKnobs})
	if err := start("vivo", p.cfg.SimVivoAddr, v, err); err != nil {
		return err
	}
	o, err := sim.NewOppo(sim.OppoConfig{Addr: p.cfg.SimOppoAddr, Region: "any", Record: simRecord, Knobs: receiptKnobs})
	if err := start("OPPO", p.cfg.SimOppoAddr, o, err); err != nil {
		return err
	}
	z, err := sim.NewMz(sim.MzConfig{Addr: p.cfg.SimMzAddr, Record: simRecord, Knobs: receiptKnobs})
	if err := start("Meizu", p.cfg.SimMzAddr, z, err); err != nil {
		return err
	}
	hn, err := sim.NewHonor(sim.HonorConfig{Addr: p.cfg.SimHonorAddr, Record: simRecord, Knobs: receiptKnobs})
	if err := start("Honor", p.cfg.SimHonorAddr, hn, err); err != nil {
		return err
	}
	p.sims = &sims{apns: a, fcm: f, hms: h, mi: m, vivo: v, oppo: o, mz: z, honor: hn}
	g.Add("simulators", service.Func(func(ctx context.Context) error {
		<-ctx.Done()
		return closeAll()
	}))
	p8, err := a.NewKey(simKeyID, simTeamID)
	if err != nil {
		return fmt.Errorf("cannot make a simulator APNs key: %w", err)
	}
	apnsCred, err := json.Marshal(apns.CredentialsJSON{
		DefaultTopic: simTopic,
		Teams:        []apns.TeamKey{{TeamID: simTeamID, KeyID: simKeyID, P8: string(p8)}},
	})
	if err != nil {
		return fmt.Errorf("BUG: cannot encode simulator credentials: %w", err)
	}
	fcmCred, err := f.NewServiceAccount(simProject)
	if err != nil {
		return fmt.Errorf("cannot make a simulator FCM service account: %w", err)
	}
	if p.opts.DevApp == nil {
		return errors.New("--sim needs the dev app: Options.DevApp is not set")
	}
	app, err := p.opts.DevApp(ctx, p.store)
	if err != nil {
		return err
	}
	if app.Credentials == nil {
		app.Credentials = map[string]json.RawMessage{}
	}
	app.Credentials["apns"] = apnsCred
	app.Credentials["fcm"] = fcmCred
	vivoKey, vivoSecret := v.NewApp(simVivoApp)
	oppoKey, oppoSecret := o.NewApp()
	mzAppID, mzSecret := z.NewApp()
	honorClient, honorSecret := hn.NewApp(simHonorApp)
	// Receipts: the HMS and Honor apps' receipt configuration, as entered at their consoles.
	var receiptUser, receiptKey string
	if u := strings.TrimRight(p.cfg.ReceiptURL, "/"); u != "" {
		receiptUser, receiptKey = "pushd-dev", randomHex(16)
		h.SetReceipt(simHMSApp, sim.ReceiptConfig{URL: u + receipt.Path + push.ChannelHMS + "/" + app.ID, User: receiptUser, Key: receiptKey})
		hn.SetReceipt(simHonorApp, sim.ReceiptConfig{URL: u + receipt.Path + push.ChannelHonor + "/" + app.ID, User: receiptUser, Key: receiptKey})
	}
	// The vendors' credentials are hybrid profiles: the simulator's app is the dev app's _default.
	for vendor, profile := range map[string]any{
		push.ChannelHMS:  hms.ProfileJSON{AppID: simHMSApp, AppSecret: h.NewApp(simHMSApp), ReceiptUser: receiptUser, ReceiptKey: receiptKey},
		push.ChannelMi:   mi.ProfileJSON{AppSecret: m.NewApp(simTopic), PackageName: simTopic},
		push.ChannelVivo: vivo.ProfileJSON{AppID: simVivoApp, AppKey: vivoKey, AppSecret: vivoSecret},
		push.ChannelOppo: oppo.ProfileJSON{AppKey: oppoKey, MasterSecret: oppoSecret},
		push.ChannelMz:   mz.ProfileJSON{AppID: json.Number(mzAppID), AppSecret: mzSecret},
		// Honor Push (sender/honor).
		push.ChannelHonor: honor.ProfileJSON{AppID: simHonorApp, ClientID: honorClient, ClientSecret: honorSecret, ReceiptUser: receiptUser, ReceiptKey: receiptKey},
	} {
		cred, err := json.Marshal(map[string]any{push.DefaultProfile: profile})
		if err != nil {
			return fmt.Errorf("BUG: cannot encode simulator credentials: %w", err)
		}
		app.Credentials[vendor] = cred
	}
	app.UpdatedAt = time.Now().UTC()
	if err := p.store.PutApp(ctx, app); err != nil {
		return fmt.Errorf("cannot give the dev app simulator credentials: %w", err)
	}
	fmt.Fprintf(stdout, "gateway simulators: APNs %s (topic %s), FCM %s, HMS %s, Honor %s, vivo %s, OPPO %s, Xiaomi %s, Meizu %s; delivered pushes: curl -sk %s/_stats\n",
		a.URL(), simTopic, f.URL(), h.URL(), hn.URL(), v.URL(), o.URL(), m.URL(), z.URL(), a.URL())
	return nil
}
