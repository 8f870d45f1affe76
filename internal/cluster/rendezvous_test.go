package cluster

import (
	"fmt"
	"testing"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// TestOwnerIsStable: the owner depends only on the member set, not on its
// order, so every replica computes the same assignment.
func TestOwnerIsStable(t *testing.T) {
	members := []string{"hub-a", "hub-b", "hub-c"}
	reversed := []string{"hub-c", "hub-b", "hub-a"}
	for _, k := range names("gw", 500) {
		a, b := Owner(k, members), Owner(k, reversed)
		if a != b || a == "" {
			t.Fatalf("owner of %s: %q with one order, %q with another", k, a, b)
		}
	}
	if Owner("gw-0", nil) != "" {
		t.Fatal("no member must own nothing")
	}
}

// TestAssignIsBalanced: 10,000 sinks over 3 and 5 replicas land within 10%
// of an even share.
func TestAssignIsBalanced(t *testing.T) {
	keys := names("gw", 10000)
	for _, n := range []int{3, 5} {
		members := names("hub", n)
		count := map[string]int{}
		for _, o := range assign(keys, members) {
			count[o]++
		}
		even := len(keys) / n
		for _, m := range members {
			if c := count[m]; c < even*9/10 || c > even*11/10 {
				t.Errorf("%d members: %s owns %d sinks, want %d +-10%%", n, m, c, even)
			}
		}
	}
}

// TestAssignMovesMinimally: when a member leaves, only its keys move; when
// one joins, only the keys it wins move (to it).
func TestAssignMovesMinimally(t *testing.T) {
	keys := names("gw", 3000)
	three := []string{"hub-a", "hub-b", "hub-c"}
	before := assign(keys, three)
	after := assign(keys, []string{"hub-a", "hub-c"})
	moved := 0
	for _, k := range keys {
		if before[k] != "hub-b" && after[k] != before[k] {
			t.Fatalf("%s moved from %s to %s though its owner stayed", k, before[k], after[k])
		}
		if before[k] == "hub-b" {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("hub-b owned nothing")
	}
	four := assign(keys, append(three, "hub-d"))
	gained := 0
	for _, k := range keys {
		if four[k] != before[k] {
			if four[k] != "hub-d" {
				t.Fatalf("%s moved from %s to %s when hub-d joined", k, before[k], four[k])
			}
			gained++
		}
	}
	if gained < len(keys)/4*8/10 || gained > len(keys)/4*12/10 {
		t.Errorf("hub-d gained %d of %d keys, want about a quarter", gained, len(keys))
	}
}

// assign returns the owner of each key.
func assign(keys, members []string) map[string]string {
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		out[k] = Owner(k, members)
	}
	return out
}
