package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --memory-limit auto reads the cgroup's limit from a fake cgroup root:
// v2's memory.max before v1's memory.limit_in_bytes, "max" and v1's
// page-rounded MaxInt64 as no limit; a size given on the flag wins.
func TestMemoryLimitFromCgroup(t *testing.T) {
	write := func(t *testing.T, root, rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, flag string
		files      map[string]string
		want       int64
		source     string
	}{
		{"v2", "auto", map[string]string{"memory.max": "1073741824\n"}, 966367641, "90% of ROOT/memory.max (1073741824 bytes)"},
		{"v2 unlimited", "auto", map[string]string{"memory.max": "max\n"}, 0, "none (ROOT/memory.max sets no limit)"},
		{"v1", "auto", map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, 483183820, "90% of ROOT/memory/memory.limit_in_bytes (536870912 bytes)"},
		{"v1 unlimited", "auto", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, "none (ROOT/memory/memory.limit_in_bytes sets no limit)"},
		{"v2 before v1", "auto", map[string]string{"memory.max": "2048", "memory/memory.limit_in_bytes": "4096"}, 1843, "90% of ROOT/memory.max (2048 bytes)"},
		{"no cgroup", "auto", nil, 0, "none (no cgroup memory limit found)"},
		{"flag", "512MiB", map[string]string{"memory.max": "1073741824"}, 512 << 20, "--memory-limit"},
		{"flag bytes", "1000", nil, 1000, "--memory-limit"},
		{"off", "0", map[string]string{"memory.max": "1073741824"}, 0, "none (--memory-limit 0)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, body := range tc.files {
				write(t, root, rel, body)
			}
			got, source, err := memoryLimit(tc.flag, root)
			if err != nil {
				t.Fatal(err)
			}
			if want := rooted(tc.source, root); got != tc.want || source != want {
				t.Errorf("memoryLimit(%q) = %d, %q; want %d, %q", tc.flag, got, source, tc.want, want)
			}
		})
	}
	root := t.TempDir()
	write(t, root, "memory.max", "lots")
	if _, _, err := memoryLimit("auto", root); err == nil {
		t.Error("a memory.max that is not a number: no error")
	}
	if _, _, err := memoryLimit("1.5GB", root); err == nil {
		t.Error("--memory-limit 1.5GB: no error")
	}
}

func rooted(s, root string) string { return strings.Replace(s, "ROOT", root, 1) }
