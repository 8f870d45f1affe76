package main

import (
	"strings"
	"testing"
)

// TestRequireLoopback: without tokens only loopback addresses are allowed.
func TestRequireLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:7070", "127.0.0.2:0", "[::1]:7070", "localhost:7070"} {
		if err := requireLoopback(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:7070", ":7070", "[::]:7070", "10.1.2.3:7070", "192.168.0.10:0"} {
		err := requireLoopback(addr)
		if err == nil || !strings.Contains(err.Error(), "--insecure-listen-any") || !strings.Contains(err.Error(), "--auth-tokens") {
			t.Errorf("%s: want a refusal naming --auth-tokens and --insecure-listen-any, got %v", addr, err)
		}
	}
	if err := requireLoopback("no-port"); err == nil {
		t.Error("an address without a port must fail")
	}
}

// TestOpsFlags: the security and metrics flags parse, with their defaults.
func TestOpsFlags(t *testing.T) {
	f, err := parseFlags([]string{"--auth-tokens", "t", "--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca", "--insecure-listen-any", "--diagnostics-include-secrets", "--metrics-listen", ""}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	o := f.ops
	if o.authTokens != "t" || o.tlsCert != "c" || o.tlsKey != "k" || o.tlsClientCA != "ca" || !o.insecureListenAny || !o.includeSecrets || o.metricsListen != "" {
		t.Fatalf("%+v", o)
	}
	d, err := parseFlags(nil, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	if d.ops.metricsListen != defaultMetricsListen || d.ops.includeSecrets || d.ops.insecureListenAny {
		t.Fatalf("defaults: %+v", d.ops)
	}
}
