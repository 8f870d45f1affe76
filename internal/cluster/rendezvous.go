package cluster

import "hash/fnv"

// Owner returns the member that owns key by rendezvous hashing, the same on every
// replica; a join or leave moves only the keys that member wins or held ("": none).
func Owner(key string, members []string) string {
	var best string
	var bestScore uint64
	for _, m := range members {
		s := score(m, key)
		if best == "" || s > bestScore || (s == bestScore && m < best) {
			best, bestScore = m, s
		}
	}
	return best
}

func score(member, key string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return mix(h.Sum64())
}

// mix is splitmix64's finaliser: FNV alone skews the balance of similar names.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
