package hybrid

// Compressions is how many times a reconfigure frame was gzip'd.
func (s *Server) Compressions() uint64 { return s.frames.compressions.Load() }

// HoldHandshakeSlots takes all but n of the TLS handshake slots until the
// returned func gives them back.
func (s *Server) HoldHandshakeSlots(n int) (release func()) {
	held := cap(s.handshakes.slots) - n
	for range held {
		s.handshakes.slots <- struct{}{}
	}
	return func() {
		for range held {
			<-s.handshakes.slots
		}
	}
}

// FreeHandshakeSlots is how many handshakes could start now.
func (s *Server) FreeHandshakeSlots() int { return cap(s.handshakes.slots) - len(s.handshakes.slots) }
