package harness

import (
	"log/slog"
	"strings"
	"testing"
)

// TestLogRecorderFindsDuplicateKeys: a key given by the logger and again by
// the line, or twice in one group, is reported; the same key in different
// groups is not.
func TestLogRecorderFindsDuplicateKeys(t *testing.T) {
	r := &LogRecorder{level: slog.LevelDebug, state: &logState{}} // no Cleanup: this test reads the duplicates itself
	log := r.Logger().With("sink", "gw", "kind", "kong")
	log.Info("apply", "sink", "gw", "result", "applied")
	log.WithGroup("entity").Info("synced", "kind", "service", "name", "a")
	log.Debug("flat", slog.Group("g", "a", 1, "a", 2))
	d := r.Duplicates()
	if len(d) != 2 || !strings.Contains(d[0], "(twice: sink)") || !strings.Contains(d[1], "(twice: g.a)") {
		t.Fatalf("duplicates %q", d)
	}
	if l := r.Lines(); len(l) != 3 || l[1] != "INFO synced sink=gw kind=kong entity.kind=service entity.name=a" {
		t.Fatalf("lines %q", l)
	}
}
