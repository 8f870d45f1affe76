package builtin

import (
	"slices"
	"testing"

	"github.com/confighub/confighub/sink"
)

func TestRegisterAddsEveryBuiltInKind(t *testing.T) {
	r := sink.NewRegistry()
	if err := Register(r, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	want := []string{"file", "kong", "kong-db", "konnect", "plugin"}
	if got := r.Kinds(); !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	if err := Register(r, t.TempDir()); err == nil {
		t.Fatal("registering twice must fail: a kind name is unique")
	}
}
