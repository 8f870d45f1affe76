package server

// WatchEncodes returns how many status events were marshalled for the
// WatchStatus streams.
func WatchEncodes(s *Server) int { return s.hub.watchEnc.Encodes() }

// CPUTime is cpuTime for the external tests' benchmarks.
var CPUTime = cpuTime

// WithKeepalive sets the HTTP/2 keepalive policy (default DefaultKeepalive).
func WithKeepalive(k Keepalive) Option { return func(o *options) { o.keepalive = k } }
