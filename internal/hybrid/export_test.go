package hybrid

// Compressions is how many times a reconfigure frame was gzip'd.
func (s *Server) Compressions() uint64 { return s.frames.compressions.Load() }
