package status

// Watchers returns the number of open watchers of a stream.
func Watchers(b *Broker, stream string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.streams[stream]; s != nil {
		return len(s.watchers)
	}
	return 0
}
