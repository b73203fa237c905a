package h2

import (
	"runtime"

	"golang.org/x/net/http2"
)

// writeLoop writes what plan hands it and flushes once nothing more is queued: requests
// arriving while a batch is written share its syscall.
func (c *Conn) writeLoop() {
	pingData := [8]byte{'p', 'u', 's', 'h', 'd'}
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			return
		}
		yielded := false
		for {
			ctl, ok := c.plan()
			if !ok {
				return
			}
			if err := c.writeControl(&ctl, pingData); err != nil {
				c.fail(err)
				return
			}
			if len(c.ops) == 0 && ctl.empty() {
				if !yielded && c.bw.Buffered() > 0 {
					// Once before the syscall, let the callers the last answers woke queue
					// their next requests: they then share this flush.
					yielded = true
					runtime.Gosched()
					continue
				}
				break
			}
			if err := c.writeOps(); err != nil {
				c.fail(err)
				return
			}
		}
		if err := c.bw.Flush(); err != nil {
			c.fail(err)
			return
		}
	}
}

func (ctl *control) empty() bool {
	return ctl.settingsAcks == 0 && len(ctl.pingAcks) == 0 && !ctl.ping && ctl.connWindow == 0 &&
		len(ctl.streamWins) == 0 && len(ctl.resets) == 0
}

// plan takes the pending control frames and, within the windows and the stream limit, the
// next request frames into c.ops. It returns false once the connection failed.
func (c *Conn) plan() (control, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return control{}, false
	}
	ctl := c.ctl
	c.ctl = control{}
	c.maxFrame = c.peerFrame
	c.ops = c.ops[:0]
	for i := 0; i < len(c.blocked); {
		s := c.blocked[i]
		c.planData(s)
		if s.sent == len(s.req.Body) {
			c.blocked = append(c.blocked[:i], c.blocked[i+1:]...)
			continue
		}
		if c.sendWindow <= 0 {
			break
		}
		i++
	}
	started := 0
	for started < len(c.waiting) && c.active < c.maxStreams && !c.goAway && started < maxHeaderBatch {
		if c.nextID > maxStreamID {
			c.goAway = true // ids exhausted: the pool opens a new connection
			for _, s := range c.waiting {
				s.err = errUnusable
				s.signal()
			}
			c.waiting = nil
			break
		}
		s := c.waiting[started]
		s.id = c.nextID
		c.nextID += 2
		s.sendWin = c.peerWindow
		c.streams[s.id] = s
		c.active++
		started++
		c.handed = s.id
		c.ops = append(c.ops, op{kind: opHeaders, id: s.id, path: s.req.Path, sfx: s.req.PathSuffix,
			header: s.req.Header, end: len(s.req.Body) == 0})
		c.planData(s)
		if s.sent < len(s.req.Body) {
			c.blocked = append(c.blocked, s)
		}
	}
	if started > 0 && c.waiting != nil { // compact in place: no allocation in steady state
		n := copy(c.waiting, c.waiting[started:])
		clear(c.waiting[n:])
		c.waiting = c.waiting[:n]
	}
	return ctl, true
}

// planData queues as much of s's body as the windows and the frame size allow; c.mu held.
func (c *Conn) planData(s *stream) {
	body := s.req.Body
	for s.sent < len(body) {
		n := min(len(body)-s.sent, c.peerFrame, int(c.sendWindow), int(s.sendWin))
		if n <= 0 {
			return
		}
		c.ops = append(c.ops, op{kind: opData, id: s.id, data: body[s.sent : s.sent+n], end: s.sent+n == len(body)})
		s.sent += n
		c.sendWindow -= int32(n)
		s.sendWin -= int32(n)
	}
}

func (c *Conn) writeControl(ctl *control, pingData [8]byte) error {
	for range ctl.settingsAcks {
		if err := c.fr.WriteSettingsAck(); err != nil {
			return err
		}
	}
	for _, d := range ctl.pingAcks {
		if err := c.fr.WritePing(true, d); err != nil {
			return err
		}
	}
	if ctl.ping {
		if err := c.fr.WritePing(false, pingData); err != nil {
			return err
		}
	}
	if ctl.connWindow > 0 {
		if err := c.fr.WriteWindowUpdate(0, ctl.connWindow); err != nil {
			return err
		}
	}
	for _, w := range ctl.streamWins {
		if err := c.fr.WriteWindowUpdate(w.id, w.val); err != nil {
			return err
		}
	}
	for _, r := range ctl.resets {
		if err := c.fr.WriteRSTStream(r.id, http2.ErrCode(r.val)); err != nil {
			return err
		}
	}
	return nil
}

func (c *Conn) writeOps() error {
	for i := range c.ops {
		o := &c.ops[i]
		var err error
		switch o.kind {
		case opHeaders:
			err = c.writeHeaders(o)
		case opData:
			err = c.fr.WriteData(o.id, o.end, o.data)
		}
		if err != nil {
			return err
		}
		*o = op{} // drop references to the request's bytes
	}
	c.ops = c.ops[:0]
	return nil
}

// writeHeaders writes :method POST and :scheme https (static table), :path as a literal
// without indexing, then the request's shared fragments; CONTINUATION frames past the
// server's frame size.
func (c *Conn) writeHeaders(o *op) error {
	b := append(c.hbuf[:0], 0x83, 0x87) // static indexes 3 (:method POST) and 7 (:scheme https)
	b = append(b, 0x04)                 // literal without indexing, name = static index 4 (:path)
	b = appendInt(b, 7, uint64(len(o.path)+len(o.sfx)))
	b = append(b, o.path...)
	b = append(b, o.sfx...)
	for _, h := range o.header {
		b = append(b, h...)
	}
	c.hbuf = b
	first := true
	for first || len(b) > 0 {
		n := min(len(b), c.maxFrame)
		frag, rest := b[:n], b[n:]
		var err error
		if first {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: o.id, BlockFragment: frag, EndStream: o.end, EndHeaders: len(rest) == 0})
		} else {
			err = c.fr.WriteContinuation(o.id, len(rest) == 0, frag)
		}
		if err != nil {
			return err
		}
		first, b = false, rest
	}
	return nil
}

// appendInt appends v as an hpack integer with an n-bit prefix (RFC 7541 §5.1); the
// prefix's high bits are zero (no Huffman for strings).
func appendInt(dst []byte, n uint, v uint64) []byte {
	k := uint64(1)<<n - 1
	if v < k {
		return append(dst, byte(v))
	}
	dst = append(dst, byte(k))
	v -= k
	for v >= 128 {
		dst = append(dst, byte(0x80|(v&0x7f)))
		v >>= 7
	}
	return append(dst, byte(v))
}
