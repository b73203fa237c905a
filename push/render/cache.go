package render

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/pushd/pushd/push"
)

// channels are the delivery channels a Cache has a slot for, in slot order.
var channels = [...]string{push.ChannelAPNs, push.ChannelDirect, push.ChannelFCM, push.ChannelMi,
	push.ChannelHMS, push.ChannelMz, push.ChannelVivo, push.ChannelOppo, push.ChannelHonor}

// Cache renders the channels of one job lazily, each at most once, and shares the result
// (message or error) with every later caller. It is safe for concurrent use; after a channel's
// first render, Get does not allocate.
type Cache struct {
	data  json.RawMessage
	opts  Options
	slots [len(channels)]slot
}

type slot struct {
	once   sync.Once
	msg    *push.Message
	badged *Badged // apns only: the per-target template of a "badge": "Increment" push
	err    error
}

// NewCache returns the render cache of job. The render time of each channel (for FCM's
// relative ttl) is the time of its first Get.
func NewCache(job *push.Job) *Cache {
	return &Cache{data: job.Data, opts: OptionsFor(job)}
}

// Get returns the job's message for channel, rendering it on first use. The message is
// shared: callers must not modify it.
func (c *Cache) Get(channel string) (*push.Message, error) {
	i := slotOf(channel)
	if i < 0 {
		return nil, fmt.Errorf("cannot render the %s payload: %w", channel, ErrUnknownChannel)
	}
	s := c.render(i)
	return s.msg, s.err
}

// Badged returns the per-target APNs template of a push whose badge is "Increment", or nil
// (no Increment, or no APNs message). It renders the APNs message on first use, as Get does.
func (c *Cache) Badged() *Badged {
	return c.render(slotOf(push.ChannelAPNs)).badged
}

func (c *Cache) render(i int) *slot {
	s := &c.slots[i]
	s.once.Do(func() {
		if channels[i] == push.ChannelAPNs {
			s.msg, s.badged, s.err = RenderBadged(c.data, c.opts)
			return
		}
		s.msg, s.err = Render(c.data, channels[i], c.opts)
	})
	return s
}

func slotOf(channel string) int {
	for i, ch := range channels {
		if ch == channel {
			return i
		}
	}
	return -1
}
