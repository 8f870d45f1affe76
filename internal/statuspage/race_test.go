//go:build race

package statuspage_test

// raceEnabled: the race detector slows the hub's side several times, so
// the page's time bounds are checked by the run without it (make test).
const raceEnabled = true
