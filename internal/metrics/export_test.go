package metrics

// WithProfileStarted calls f once a CPU profile or trace holds the one
// slot, so a test can send a second one while the first surely runs.
// Pass it after WithProfiling.
func WithProfileStarted(f func()) ListenOption {
	return func(l *listenConfig) { l.prof.started = f }
}
