package sender

import (
	"flag"
	"testing"

	"github.com/pushd/pushd/push"
)

// TestSenderVendorDefaultRates: vivo and OPPO pools are paced to the low end of the vendors'
// per-app limits unless --sender-rates says otherwise; other channels stay unlimited.
func TestSenderVendorDefaultRates(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.rate("app1", push.ChannelVivo) != 3000 || c.rate("app1", push.ChannelOppo) != 5000 || c.rate("app1", push.ChannelAPNs) != 0 {
		t.Fatalf("default rates %v", c.Rates)
	}
	var cfg Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg.RegisterFlags(fs, "sender-")
	if err := fs.Parse([]string{"--sender-rates", "vivo=0, app1/oppo=20000,mi=500"}); err != nil {
		t.Fatal(err)
	}
	c = cfg.WithDefaults()
	if c.rate("app1", push.ChannelVivo) != 0 || c.rate("app1", push.ChannelOppo) != 20000 || c.rate("app2", push.ChannelOppo) != 5000 || c.rate("app1", push.ChannelMi) != 500 {
		t.Fatalf("rates %v", c.Rates)
	}
	for _, bad := range []string{"vivo", "vivo=-1", "=3", "oppo=x"} {
		if _, err := ParseRates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if c := (Config{}).WithDefaults(); c.rate("app1", push.ChannelMi) != 500 || c.rate("app1", push.ChannelMz) != 200 || c.rate("app1", push.ChannelHMS) != 0 {
		t.Errorf("mi, mz, hms default rates %v", c.Rates)
	}
	if got := FormatRates(DefaultRates); got != "honor=3000,mi=500,mz=200,oppo=5000,vivo=3000" {
		t.Errorf("FormatRates %q", got)
	}
}
