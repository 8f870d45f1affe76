// Command confighub-bench measures the hub's performance targets (the
// target column of docs/performance.md) against their baselines, in one run on one
// machine, and prints one table (and writes it as JSON under
// bench/results/). Run it with `make bench`; see docs/performance.md.
//
// The hub runs in this process (hub.New with the real bbolt store in a temp
// dir, engine, server.New on 127.0.0.1, gRPC over loopback). Scenario 2's
// 1,000 emulated gateways run in a child process (this binary with
// -fleet), so the hub's memory is measured without theirs; scenario 7's
// clients in another (-push-child), as controllers push from their own.
//
// Scenarios, flags and the latest figures: docs/performance.md.
package main
