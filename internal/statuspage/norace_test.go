//go:build !race

package statuspage_test

const raceEnabled = false
