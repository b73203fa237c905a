package h2

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func (c *Conn) readLoop() {
	for {
		in, f, err := c.rd.next()
		if err != nil {
			// se lives only on this path: errors.As makes it escape, an allocation per frame
			// if it were declared for every frame.
			var se http2.StreamError
			if errors.As(err, &se) { // a malformed frame of one stream: that stream ends
				c.mu.Lock()
				s := c.streams[se.StreamID]
				var idle bool
				if s != nil {
					idle = c.endLocked(s)
				}
				c.ctl.resets = append(c.ctl.resets, idVal{se.StreamID, uint32(se.Code)})
				c.mu.Unlock()
				c.kick()
				if s != nil {
					c.ended(s, &StreamError{Code: se.Code}, idle)
				}
				continue
			}
			c.fail(err)
			return
		}
		c.frames.Add(1)
		if f == nil {
			err = c.handleIn(&in)
		} else {
			err = c.handle(f)
		}
		if err != nil {
			c.fail(err)
			return
		}
	}
}

// handleIn applies a frame of an answer (HEADERS, CONTINUATION, DATA); an error is a
// connection error.
func (c *Conn) handleIn(in *inFrame) error {
	switch in.typ {
	case http2.FrameHeaders:
		c.curID, c.curEnd, c.curStatus, c.curRetryAfter = in.id, in.flags.Has(http2.FlagHeadersEndStream), 0, ""
		return c.onFragment(in.data, in.flags.Has(http2.FlagHeadersEndHeaders))
	case http2.FrameContinuation:
		return c.onFragment(in.data, in.flags.Has(http2.FlagContinuationEndHeaders))
	default:
		c.onData(in.id, in.length, in.flags.Has(http2.FlagDataEndStream), in.data)
	}
	return nil
}

// handle applies one of the frames frameReader leaves to the Framer; an error is a
// connection error.
func (c *Conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := c.applySettings(f); err != nil {
			return err
		}
		c.kick()
	case *http2.PingFrame:
		if !f.IsAck() {
			c.mu.Lock()
			c.ctl.pingAcks = append(c.ctl.pingAcks, f.Data)
			c.mu.Unlock()
			c.kick()
		}
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f.StreamID, f.Increment)
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		s := c.streams[f.StreamID]
		var idle bool
		if s != nil {
			idle = c.endLocked(s)
		}
		c.mu.Unlock()
		if s == nil {
			return nil
		}
		if f.ErrCode == http2.ErrCodeRefusedStream {
			c.ended(s, errRefused, idle)
		} else {
			c.ended(s, &StreamError{Code: f.ErrCode}, idle)
		}
	case *http2.GoAwayFrame:
		c.onGoAway(f.LastStreamID)
	case *http2.PushPromiseFrame:
		return errors.New("server push after SETTINGS_ENABLE_PUSH=0")
	}
	return nil // PRIORITY, unknown types: ignored
}

func (c *Conn) applySettings(f *http2.SettingsFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingMaxConcurrentStreams:
			c.maxStreams = int(min(s.Val, 1<<20))
		case http2.SettingInitialWindowSize:
			delta := int32(s.Val) - c.peerWindow
			for _, st := range c.streams {
				if int64(st.sendWin)+int64(delta) > maxStreamID {
					return errors.New("SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window")
				}
				st.sendWin += delta
			}
			c.peerWindow = int32(s.Val)
		case http2.SettingMaxFrameSize:
			c.peerFrame = int(s.Val)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bad http2 settings: %w", err)
	}
	c.ctl.settingsAcks++
	return nil
}

func (c *Conn) onWindowUpdate(id, inc uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id == 0 {
		if int64(c.sendWindow)+int64(inc) > maxStreamID {
			return errors.New("connection flow-control window overflow")
		}
		c.sendWindow += int32(inc)
	} else if s := c.streams[id]; s != nil {
		if int64(s.sendWin)+int64(inc) > maxStreamID {
			// A stream error; the request may not have been processed, but a server that
			// breaks flow control is not trusted with the rest of the connection either.
			return errors.New("stream flow-control window overflow")
		}
		s.sendWin += int32(inc)
	}
	if len(c.blocked) > 0 {
		c.kick()
	}
	return nil
}

// emit takes one decoded response header field (reader only).
func (c *Conn) emit(f hpack.HeaderField) {
	switch f.Name {
	case ":status":
		if len(f.Value) == 3 {
			n := 0
			for i := 0; i < 3; i++ {
				d := f.Value[i]
				if d < '0' || d > '9' {
					return
				}
				n = n*10 + int(d-'0')
			}
			if n >= 100 { // "001" is three digits but no status: the answer is malformed
				c.curStatus = n
			}
		}
	case "retry-after":
		c.curRetryAfter = f.Value
	}
}

func (c *Conn) onFragment(frag []byte, end bool) error {
	// Every header block is decoded, also of streams we no longer track: the decoder's
	// dynamic table must follow the server's.
	if _, err := c.dec.Write(frag); err != nil {
		return fmt.Errorf("cannot decode http2 headers: %w", err)
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return fmt.Errorf("cannot decode http2 headers: %w", err)
	}
	id := c.curID
	c.curID = 0
	var (
		err  error
		done = c.curEnd
		idle bool
	)
	c.mu.Lock()
	s := c.streams[id]
	switch {
	case s == nil: // not ours, or ended meanwhile
	case s.status != 0: // trailers
	case c.curStatus >= 100 && c.curStatus < 200:
		if done { // else informational: the final answer follows
			err = &StreamError{Code: http2.ErrCodeProtocol}
		}
	case c.curStatus == 0:
		err, done = &StreamError{Code: http2.ErrCodeProtocol}, true
	default:
		s.status, s.retryAfter = c.curStatus, c.curRetryAfter
	}
	done = done && s != nil
	if done {
		idle = c.endLocked(s)
	}
	c.mu.Unlock()
	if done {
		c.ended(s, err, idle)
	}
	return nil
}

// onData takes a DATA frame of stream id: n bytes of payload (padding counts against flow
// control too), of which d is the data; end is its END_STREAM.
func (c *Conn) onData(id uint32, n int, end bool, d []byte) {
	c.mu.Lock()
	s := c.streams[id]
	c.recvUnacked += n
	kick := false
	if c.recvUnacked >= recvConnWindow/2 {
		c.ctl.connWindow += uint32(c.recvUnacked)
		c.recvUnacked, kick = 0, true
	}
	var err error
	switch {
	case s == nil:
	case s.status == 0: // DATA before HEADERS
		err, end = &StreamError{Code: http2.ErrCodeProtocol}, true
	default:
		if s.status != 200 {
			if room := c.cfg.MaxBody - len(s.body); room > 0 {
				s.body = append(s.body, d[:min(room, len(d))]...)
			}
		}
		if !end {
			s.recvd += n
			if s.recvd >= recvStreamWindow/2 {
				c.ctl.streamWins = append(c.ctl.streamWins, idVal{s.id, uint32(s.recvd)})
				s.recvd, kick = 0, true
			}
		}
	}
	end = end && s != nil
	var idle bool
	if end {
		idle = c.endLocked(s)
	}
	c.mu.Unlock()
	if kick {
		c.kick()
	}
	if end {
		c.ended(s, err, idle)
	}
}

// onGoAway: streams above last were not processed and end now; the others run to their
// answer, then the connection closes. No new stream starts.
func (c *Conn) onGoAway(last uint32) {
	c.mu.Lock()
	c.goAway = true
	var refused []*stream
	for id, s := range c.streams {
		if id > last {
			refused = append(refused, s)
		}
	}
	for _, s := range refused {
		c.finishLocked(s)
	}
	waiting := c.waiting
	c.waiting = nil
	idle := c.active == 0
	c.mu.Unlock()
	for _, s := range refused {
		c.ended(s, errAboveGoAway, false)
	}
	for _, s := range waiting {
		s.err = errAboveGoAway
		s.signal()
	}
	if idle {
		c.fail(errUnusable)
	}
}
