package server

import (
	"testing"
)

// recvPool hands out buffers of the length asked for and a capacity at
// least that, at and around every tier's bounds, whatever was put back
// before (buffers of every size are put back between the rounds).
func TestRecvPoolSizes(t *testing.T) {
	var p recvPool
	sizes := []int{0, 1, 255, 256, 257, 4095, 4096, 4097, 16 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 3 << 20, 5<<20 + 3}
	for round := range 3 {
		var got []*[]byte
		for _, n := range sizes {
			b := p.Get(n)
			if len(*b) != n || cap(*b) < n {
				t.Fatalf("round %d: Get(%d) gave len %d cap %d", round, n, len(*b), cap(*b))
			}
			for i := range *b {
				(*b)[i] = byte(round)
			}
			got = append(got, b)
		}
		for _, b := range got {
			p.Put(b)
		}
	}
}
