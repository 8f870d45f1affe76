package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/confighub/confighub/internal/hub"
	"github.com/confighub/confighub/internal/server"
)

// limitFlags are the bounds of what clients can make the hub hold, and the Go memory limit.
type limitFlags struct {
	hub         hub.Limits
	connStreams int    // --max-concurrent-streams
	memoryLimit string // as given: "auto", "0" or a size
}

func addLimitFlags(fs *flag.FlagSet, l *limitFlags) {
	fs.IntVar(&l.hub.MaxStreams, "max-streams", hub.DefaultMaxStreams, "most streams that hold a configuration: a push that would create another is refused with ResourceExhausted (a store that holds more still starts and serves them); 0 for no bound")
	fs.IntVar(&l.hub.MaxSinks, "max-sinks", hub.DefaultMaxSinks, "most sinks: a PutSink of a new name is refused with ResourceExhausted; 0 for no bound")
	fs.IntVar(&l.hub.MaxWatchers, "max-watchers", hub.DefaultMaxWatchers, "most WatchStatus streams open at once on this hub: one more is refused with ResourceExhausted; 0 for no bound")
	fs.Int64Var(&l.hub.MaxHeldConfigBytes, "max-held-config-bytes", hub.DefaultMaxHeldConfigBytes, "most bytes of every stream's current configuration together: a push that would take the total past it is refused with ResourceExhausted; at least --max-config-bytes, 0 for no bound")
	fs.IntVar(&l.connStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams, "most calls (status watches included) one client connection may have open at once: one more is refused with ResourceExhausted")
	fs.StringVar(&l.memoryLimit, "memory-limit", "auto", "soft limit of the Go runtime's memory (debug.SetMemoryLimit), in bytes or with a KiB, MiB or GiB suffix: the garbage collector works harder as the hub nears it; auto: 90% of the cgroup's memory limit when there is one (cgroup v2 memory.max, v1 memory.limit_in_bytes), else none; 0: none")
}

func (l limitFlags) check(maxConfig int64) error {
	for name, v := range map[string]int{"--max-streams": l.hub.MaxStreams, "--max-sinks": l.hub.MaxSinks, "--max-watchers": l.hub.MaxWatchers} {
		if v < 0 {
			return fmt.Errorf("%s %d: 0 (no bound) or more", name, v)
		}
	}
	if l.connStreams < 1 {
		return fmt.Errorf("--max-concurrent-streams %d: at least 1", l.connStreams)
	}
	if m := l.hub.MaxHeldConfigBytes; m != 0 && m < maxConfig {
		return fmt.Errorf("--max-held-config-bytes %d is smaller than --max-config-bytes %d: the largest configuration could never be pushed", m, maxConfig)
	}
	if _, err := parseSize(l.memoryLimit); err != nil && l.memoryLimit != "auto" {
		return fmt.Errorf("--memory-limit %q: %w", l.memoryLimit, err)
	}
	return nil
}

// parseSize reads digits with an optional KiB, MiB or GiB suffix.
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New("want auto, 0, or a number of bytes with an optional KiB, MiB or GiB suffix")
	}
	return n * mult, nil
}

const cgroupRoot = "/sys/fs/cgroup"

// cgroupMemoryLimit reads the cgroup v2 or v1 memory limit under root (0: none) and its file.
func cgroupMemoryLimit(root string) (int64, string, error) {
	for _, f := range []string{filepath.Join(root, "memory.max"), filepath.Join(root, "memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, f, err
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, f, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, f, fmt.Errorf("%s: %q is not a number of bytes", f, v)
		}
		// cgroup v1 says "no limit" with MaxInt64 rounded down to a page.
		if n >= math.MaxInt64&^(1<<30-1) {
			return 0, f, nil
		}
		return n, f, nil
	}
	return 0, "", nil
}

// autoMemoryShare of the cgroup's limit goes to the Go runtime; the rest to what it does not count.
const autoMemoryShare = 0.9

// memoryLimit is the soft limit --memory-limit asks for, and its source.
func memoryLimit(flagValue, root string) (int64, string, error) {
	if flagValue != "auto" {
		n, err := parseSize(flagValue)
		if err != nil {
			return 0, "", fmt.Errorf("--memory-limit %q: %w", flagValue, err)
		}
		if n == 0 {
			return 0, "none (--memory-limit 0)", nil
		}
		return n, "--memory-limit", nil
	}
	n, file, err := cgroupMemoryLimit(root)
	if err != nil {
		return 0, "", fmt.Errorf("--memory-limit auto: read the cgroup's memory limit: %w", err)
	}
	if n == 0 {
		if file == "" {
			return 0, "none (no cgroup memory limit found)", nil
		}
		return 0, "none (" + file + " sets no limit)", nil
	}
	return int64(float64(n) * autoMemoryShare), fmt.Sprintf("%.0f%% of %s (%d bytes)", autoMemoryShare*100, file, n), nil
}

// applyMemoryLimit sets and logs the Go runtime's soft memory limit.
func applyMemoryLimit(flagValue, root string, log *slog.Logger) error {
	n, source, err := memoryLimit(flagValue, root)
	if err != nil {
		return err
	}
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	log.Info("memory limit", "bytes", n, "source", source)
	return nil
}
