package sim

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
)

// VendorsFile is the file pushsim writes into -dir when it runs vendor simulators: the app
// credentials of each (channel → profile → the sender's profile JSON, endpoints included),
// ready for PUT /admin/apps/<id>/credentials/<channel>.
const VendorsFile = "vendors.json"

// QuotaFile is the file pushsim writes into -dir when --vivo-quota-profile is set: which
// vendor profile of the app has a small day quota in its simulator (QuotaProfile).
const QuotaFile = "quota.json"

// QuotaProfile says which profile of a vendor's credentials (in VendorsFile) is an app of the
// simulator with its own day quota: the load test's quota scenario pushes to it.
type QuotaProfile struct {
	Channel  string `json:"channel"`
	Profile  string `json:"profile"`
	DayQuota int64  `json:"dayQuota"`
}

// vendorFlags are pushsim's flags of the vendor simulators; an empty address starts none.
type vendorFlags struct {
	hms, mi, vivo, oppo, mz string
	honor                   string
	pkg                     string
	vivoQuota               int64
}

func (v *vendorFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.hms, "hms-addr", "", "HMS Push Kit simulator listen address (empty: not started)")
	fs.StringVar(&v.mi, "mi-addr", "", "Xiaomi push simulator listen address (empty: not started)")
	fs.StringVar(&v.vivo, "vivo-addr", "", "vivo push simulator listen address (empty: not started)")
	fs.StringVar(&v.oppo, "oppo-addr", "", "OPPO push simulator listen address, both regions (empty: not started)")
	fs.StringVar(&v.mz, "mz-addr", "", "Meizu push simulator listen address (empty: not started)")
	fs.StringVar(&v.honor, "honor-addr", "", "Honor push simulator listen address (empty: not started)")
	fs.StringVar(&v.pkg, "vendor-package", "com.pushd.loadtest", "Android package name the vendor simulators register the app for")
	fs.Int64Var(&v.vivoQuota, "vivo-quota-profile", 0, "> 0: a second vivo app with this day quota of targets, offered as the vivo profile \"quota\" (and in "+QuotaFile+")")
}

// quotaProfile is the vivo profile with its own day quota.
const quotaProfile = "quota"

// vendorSims are the running vendor simulators of one pushsim.
type vendorSims struct {
	closers []func() error
	certs   [][]byte
	creds   map[string]map[string]any // channel → {"_default": profile, ...}
	lines   []string
	quota   *QuotaProfile // the profile with its own day quota, if any
}

func (v *vendorSims) Close() error {
	var errs []error
	for _, c := range v.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

func (v *vendorSims) add(channel, url string, cert []byte, closer func() error, profile map[string]any) {
	v.closers = append(v.closers, closer)
	v.certs = append(v.certs, cert)
	v.creds[channel] = map[string]any{"_default": profile}
	v.lines = append(v.lines, fmt.Sprintf("%s: %s", channel, url))
}

// startVendors starts the vendor simulators whose address is set, each with one app whose
// credentials point at it. On error the ones started are closed.
func startVendors(f vendorFlags, k Knobs, noTokens bool, record int) (_ *vendorSims, err error) {
	v := &vendorSims{creds: map[string]map[string]any{}}
	defer func() {
		if err != nil {
			_ = v.Close()
		}
	}()
	if f.hms != "" {
		s, err := NewHMS(HMSConfig{Addr: f.hms, NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		const app = "100000001"
		v.add("hms", s.URL(), s.CertPEM(), s.Close, map[string]any{"appId": app, "appSecret": s.NewApp(app), "endpoint": s.URL(), "tokenUrl": s.TokenURL()})
	}
	if f.mi != "" {
		s, err := NewMi(MiConfig{Addr: f.mi, NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		v.add("mi", s.URL(), s.CertPEM(), s.Close, map[string]any{"appSecret": s.NewApp(f.pkg), "packageName": f.pkg, "endpoint": s.URL()})
	}
	if f.vivo != "" {
		s, err := NewVivo(VivoConfig{Addr: f.vivo, NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		const app = "10001"
		key, secret := s.NewApp(app)
		v.add("vivo", s.URL(), s.CertPEM(), s.Close, map[string]any{"appId": json.Number(app), "appKey": key, "appSecret": secret, "endpoint": s.URL()})
		if f.vivoQuota > 0 {
			const quotaApp = "10002"
			key, secret := s.NewApp(quotaApp)
			s.SetDayQuota(quotaApp, f.vivoQuota)
			v.creds["vivo"][quotaProfile] = map[string]any{"appId": json.Number(quotaApp), "appKey": key, "appSecret": secret, "endpoint": s.URL()}
			v.quota = &QuotaProfile{Channel: "vivo", Profile: quotaProfile, DayQuota: f.vivoQuota}
		}
	}
	if f.oppo != "" {
		s, err := NewOppo(OppoConfig{Addr: f.oppo, Region: "any", NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		key, secret := s.NewApp()
		v.add("oppo", s.URL(), s.CertPEM(), s.Close, map[string]any{"appKey": key, "masterSecret": secret, "endpoint": s.URL(), "intlEndpoint": s.URL()})
	}
	if f.mz != "" {
		s, err := NewMz(MzConfig{Addr: f.mz, NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		app, secret := s.NewApp()
		v.add("mz", s.URL(), s.CertPEM(), s.Close, map[string]any{"appId": json.Number(app), "appSecret": secret, "endpoint": s.URL()})
	}
	if f.honor != "" {
		s, err := NewHonor(HonorConfig{Addr: f.honor, NoTokenStats: noTokens, Record: record, Knobs: k})
		if err != nil {
			return nil, err
		}
		const app = "100000002"
		id, secret := s.NewApp(app)
		v.add("honor", s.URL(), s.CertPEM(), s.Close, map[string]any{"appId": app, "clientId": id, "clientSecret": secret, "endpoint": s.URL(), "tokenUrl": s.TokenURL()})
	}
	return v, nil
}

// printVendors prints one line per vendor simulator ("hms: https://...").
func (v *vendorSims) print(out io.Writer) error {
	for _, l := range v.lines {
		if _, err := fmt.Fprintln(out, l); err != nil {
			return fmt.Errorf("cannot print simulator addresses: %w", err)
		}
	}
	return nil
}
