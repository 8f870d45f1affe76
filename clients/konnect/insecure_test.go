package konnect

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	confighubv1 "github.com/confighub/confighub/api/confighub/v1"
	"github.com/confighub/confighub/sink"
)

// Skipping TLS verification is honoured only when asked, and then warned
// about.
func TestInsecureSkipVerifyWarns(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	s, err := New(spec(&confighubv1.KonnectSpec{ControlPlaneId: "cp", Token: "t",
		Tls: &confighubv1.TLS{InsecureSkipVerify: true}}), sink.Deps{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s.(sink.Closer).Close()
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "insecure_skip_verify") {
		t.Fatalf("log %q, want a warning about insecure_skip_verify", out)
	}
}
