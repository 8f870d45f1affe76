// Package store defines what the hub keeps durably and the interface its
// backends implement: bolt (the embedded default), memory (tests) and etcd
// (replicas).
//
// What is stored before a push is acknowledged: the stream's config bytes,
// hash, generation, labels and accept time, in one transaction that also
// assigns the generation and checks expected_generation. Each sink's applied
// generation and hash are recorded as they happen. Sinks put at run time are
// stored too.
package store
