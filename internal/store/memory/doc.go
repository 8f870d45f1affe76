// Package memory is an in-memory store.Store for tests: nothing survives
// the process. It keeps the same contract as the durable stores (generation
// assignment, expected_generation, unchanged on equal hash), checked by
// test/storetest.
package memory
