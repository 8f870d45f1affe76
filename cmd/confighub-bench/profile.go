package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

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

func startMutexProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	runtime.SetMutexProfileFraction(5)
	return func() {
		_ = pprof.Lookup("mutex").WriteTo(f, 0)
		_ = f.Close()
	}, nil
}
