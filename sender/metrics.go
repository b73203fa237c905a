package sender

import (
	"github.com/VictoriaMetrics/metrics"

	"github.com/pushd/pushd/push"
)

// channels are every delivery channel: metric series exist for each from the start.
var channels = []string{
	push.ChannelAPNs, push.ChannelFCM, push.ChannelDirect, push.ChannelMi,
	push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor,
}

// channelMetrics are the series of one channel, summed over its pools (app ids are not
// label values: they are unbounded).
type channelMetrics struct {
	pools      *metrics.Gauge // open pools
	capacity   *metrics.Gauge // in-flight capacity of the open pools (workers)
	inflight   *metrics.Gauge // gateway requests in flight
	queued     *metrics.Gauge // deliveries waiting in pool queues or being worked on
	rejections *metrics.Counter
	retries    *metrics.Counter
	trips      *metrics.Counter
	invErrors  *metrics.Counter
	parked     *metrics.Gauge   // deliveries waiting for a down gateway to answer again
	down       *metrics.Gauge   // pools whose gateway is down
	outages    *metrics.Counter // times a pool found its gateway down
	probes     *metrics.Counter // probe requests sent to down gateways
	outcomes   [push.OutcomeExpired + 1]*metrics.Counter

	quotaParked *metrics.Gauge   // deliveries waiting for a vendor's daily quota to reset (quota.go)
	quotaParks  *metrics.Counter // times an app+vendor was parked on a spent daily quota
}

func newMetrics(set *metrics.Set) map[string]*channelMetrics {
	out := make(map[string]*channelMetrics, len(channels))
	for _, ch := range channels {
		l := `{channel="` + ch + `"}`
		m := &channelMetrics{
			pools:      set.NewGauge("pushd_sender_pools"+l, nil),
			capacity:   set.NewGauge("pushd_sender_inflight_capacity"+l, nil),
			inflight:   set.NewGauge("pushd_sender_inflight"+l, nil),
			queued:     set.NewGauge("pushd_sender_queued"+l, nil),
			rejections: set.NewCounter("pushd_sender_rejections_total" + l),
			retries:    set.NewCounter("pushd_sender_retries_total" + l),
			trips:      set.NewCounter("pushd_sender_breaker_trips_total" + l),
			invErrors:  set.NewCounter("pushd_sender_invalidate_errors_total" + l),
			parked:     set.NewGauge("pushd_sender_parked"+l, nil),
			down:       set.NewGauge("pushd_sender_gateways_down"+l, nil),
			outages:    set.NewCounter("pushd_sender_gateway_outages_total" + l),
			probes:     set.NewCounter("pushd_sender_gateway_probes_total" + l),
		}
		m.quotaParked = set.NewGauge("pushd_sender_quota_parked"+l, nil)
		m.quotaParks = set.NewCounter("pushd_sender_quota_parks_total" + l)
		for o := push.OutcomeSent; o <= push.OutcomeExpired; o++ {
			m.outcomes[o] = set.NewCounter(`pushd_sender_deliveries_total{channel="` + ch + `",outcome="` + o.String() + `"}`)
		}
		out[ch] = m
	}
	return out
}

func (m *channelMetrics) outcome(o push.Outcome) {
	if int(o) < len(m.outcomes) && m.outcomes[o] != nil {
		m.outcomes[o].Inc()
	}
}
