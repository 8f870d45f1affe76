package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// TestDeployManifestsStart: the confighub container args of every manifest
// under deploy/ parse (no unknown flag) and pass the start-up listen
// policy (a non-loopback --listen needs --auth-tokens), so the documented
// deployment does not exit at once.
func TestDeployManifestsStart(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/*/*.yaml")
	found := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Name string   `yaml:"name"`
								Args []string `yaml:"args"`
							} `yaml:"containers"`
						} `yaml:"spec"`
					} `yaml:"template"`
				} `yaml:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, c := range doc.Spec.Template.Spec.Containers {
				if c.Name != "confighub" {
					continue
				}
				found++
				var stderr strings.Builder
				f, err := parseFlags(c.Args, &stderr)
				if err != nil {
					t.Errorf("%s: args do not parse: %v", file, err)
					continue
				}
				if err := checkListenPolicy(f); err != nil {
					t.Errorf("%s: the hub would refuse to start: %v", file, err)
				}
			}
		}
	}
	if found < 2 {
		t.Fatalf("found %d confighub containers under deploy/, want the single-node and replicated ones", found)
	}
}
