// Package store defines what the hub keeps durably and the interface its
// backends implement: bolt (the embedded default), memory (tests) and etcd
// (replicas).
//
// What is stored before a push is acknowledged: the stream's config bytes,
// hash, generation, labels and accept time; the generation is assigned and
// expected_generation checked in the same commit. A store may also
// implement Stager: the bytes are then written durably first (while the
// hub checks and hashes them) and made part of the stream by a small
// commit, or discarded if the check fails; staged bytes are never visible.
// Each sink's applied generation and hash are recorded as they happen.
// Sinks put at run time are stored too.
package store
