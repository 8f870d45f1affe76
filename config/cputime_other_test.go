//go:build !unix

package config_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
