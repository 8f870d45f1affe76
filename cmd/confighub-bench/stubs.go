package main

import (
	"context"
	"os"
	"runtime/pprof"
)

func scenarioHungKonnect(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) { return nil, nil }
func scenarioWatchers(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) { return nil, nil }
func scenarioSerial(ctx context.Context, o opts, log func(string, ...any)) ([]Row, error) { return nil, nil }

func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}
