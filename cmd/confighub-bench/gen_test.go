package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/emulator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The generated configs must be accepted by the hub's check and by the
// emulated gateway, and each stamp must hash differently (else the hub
// answers "unchanged" and the gateway 304, and nothing is measured).
func TestGenConfigAcceptedAndDistinct(t *testing.T) {
	base := genConfig(256 << 10)
	if n := len(base); n < 250<<10 || n > 270<<10 {
		t.Fatalf("genConfig(256 KiB) made %d bytes", n)
	}
	a, b := stamped(base, 1), stamped(base, 2)
	if config.Hash(a) == config.Hash(b) || !bytes.Equal(base, genConfig(256<<10)) {
		t.Fatal("stamps must change the hash and leave the base untouched")
	}
	if _, err := config.Check(a, config.FormatJSON); err != nil {
		t.Fatalf("hub check: %v", err)
	}
	gw := emulator.New()
	defer gw.Close()
	for i, body := range [][]byte{a, b} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/config?check_hash=1&flatten_errors=1", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		gw.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			t.Fatalf("push %d: emulator answered %d: %s", i, rec.Code, rec.Body.String())
		}
	}
}

func TestTableMarksMisses(t *testing.T) {
	var out strings.Builder
	printTable(&out, []Row{
		ratioRow("within", "ms", 10, 10, 1.2, 1),
		ratioRow("missed", "ms", 20, 10, 1.2, 1),
	})
	lines := strings.Split(out.String(), "\n")
	if !strings.HasSuffix(strings.TrimSpace(lines[1]), "yes") || !strings.HasSuffix(strings.TrimSpace(lines[2]), "NO") {
		t.Fatalf("table:\n%s", out.String())
	}
}
