package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
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

// startTrace writes an execution trace: where goroutines waited for a
// core (go tool trace -pprof=sched), which bounds scenario 7.
func startTrace(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := trace.Start(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { trace.Stop(); _ = f.Close() }, nil
}
