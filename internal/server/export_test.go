package server

// WatchEncodes returns, per class of WatchStatus streams that encode
// alike, how many status events were marshalled.
func WatchEncodes(s *Server) []int {
	w := &s.hub.watchEnc
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, len(w.classes))
	for i, c := range w.classes {
		out[i] = c.enc.Encodes()
	}
	return out
}
