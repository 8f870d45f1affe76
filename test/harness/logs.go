package harness

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// LogRecorder is a slog.Handler for tests: it keeps every line as text
// ("LEVEL msg k=v ...", the logger's own attributes first) and fails the
// test at its end when a line carried the same key twice, as in
// "sink=gw kind=kong sink=gw kind=kong": the line an operator reads must
// say each thing once.
type LogRecorder struct {
	level slog.Level
	state *logState
	attrs []slog.Attr // from WithAttrs, keys qualified by their groups
	group string      // "a.b." prefix of the open groups
}

type logState struct {
	mu    sync.Mutex
	lines []string
	dups  []string
}

var _ slog.Handler = (*LogRecorder)(nil)

// NewLogRecorder records lines at level and above for the life of t.
func NewLogRecorder(t testing.TB, level slog.Level) *LogRecorder {
	t.Helper()
	r := &LogRecorder{level: level, state: &logState{}}
	t.Cleanup(func() {
		for _, d := range r.Duplicates() {
			t.Errorf("a log line carries a key twice: %s", d)
		}
	})
	return r
}

// Logger is a logger writing to r.
func (r *LogRecorder) Logger() *slog.Logger { return slog.New(r) }

// Lines is every line recorded so far.
func (r *LogRecorder) Lines() []string {
	r.state.mu.Lock()
	defer r.state.mu.Unlock()
	return append([]string(nil), r.state.lines...)
}

// Duplicates is every line recorded so far that carried a key twice.
func (r *LogRecorder) Duplicates() []string {
	r.state.mu.Lock()
	defer r.state.mu.Unlock()
	return append([]string(nil), r.state.dups...)
}

func (r *LogRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }

func (r *LogRecorder) Handle(_ context.Context, rec slog.Record) error {
	attrs := append([]slog.Attr(nil), r.attrs...)
	rec.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, qualify(r.group, a)...)
		return true
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	seen := map[string]bool{}
	var twice []string
	for _, a := range attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		if seen[a.Key] {
			twice = append(twice, a.Key)
		}
		seen[a.Key] = true
	}
	line := b.String()
	r.state.mu.Lock()
	defer r.state.mu.Unlock()
	r.state.lines = append(r.state.lines, line)
	if len(twice) > 0 {
		r.state.dups = append(r.state.dups, fmt.Sprintf("%s (twice: %s)", line, strings.Join(twice, ", ")))
	}
	return nil
}

func (r *LogRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append([]slog.Attr(nil), r.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, qualify(r.group, a)...)
	}
	return &c
}

func (r *LogRecorder) WithGroup(name string) slog.Handler {
	if name == "" {
		return r
	}
	c := *r
	c.group = r.group + name + "."
	return &c
}

// qualify flattens a (groups included) into attributes whose keys carry
// their group path.
func qualify(prefix string, a slog.Attr) []slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() != slog.KindGroup {
		if a.Key == "" {
			return nil
		}
		return []slog.Attr{{Key: prefix + a.Key, Value: a.Value}}
	}
	if a.Key != "" {
		prefix += a.Key + "."
	}
	var out []slog.Attr
	for _, g := range a.Value.Group() {
		out = append(out, qualify(prefix, g)...)
	}
	return out
}
