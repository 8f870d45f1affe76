// Package memory is an in-memory store.Store for tests: nothing survives
// the process. It passes test/storetest like the durable stores.
package memory
