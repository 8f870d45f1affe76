package metrics

// WithProfileStarted calls f as a CPU profile or trace starts (once it
// holds the one slot) and as a delta profile (seconds given) starts, so a
// test can act while one surely runs. Pass it after WithProfiling.
func WithProfileStarted(f func()) ListenOption {
	return func(l *listenConfig) { l.prof.started = f }
}
