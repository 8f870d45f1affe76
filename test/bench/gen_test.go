package main

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/confighub/confighub/config"
	"github.com/confighub/confighub/test/kongemu"
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
	gw := kongemu.New()
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
	if !strings.Contains(lines[1], "  yes  ") || !strings.Contains(lines[2], "  NO  ") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func TestInterleaveRunsEachOncePerRoundInVaryingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var order []int
	fn := func(i int) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			order = append(order, i)
			return time.Duration(i+1) * time.Millisecond, nil
		}
	}
	got, err := interleave(rng, 2, 20, fn(0), fn(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 20 || len(got[1]) != 20 || len(order) != 44 {
		t.Fatalf("kept %d and %d samples of %d runs, want 20, 20 of 44", len(got[0]), len(got[1]), len(order))
	}
	firsts := map[int]int{}
	for r := 0; r < len(order); r += 2 {
		if order[r] == order[r+1] {
			t.Fatalf("round %d ran %d twice", r/2, order[r])
		}
		firsts[order[r]]++
	}
	if firsts[0] == 0 || firsts[1] == 0 {
		t.Fatalf("one side always ran first: %v", firsts)
	}
	if medianMS(got[1]) != 2 || spreadMS(got[0]) != "1.00-1.00" {
		t.Fatalf("samples kept out of place: %v %v", got[0], got[1])
	}
}
