// Package storetest is the conformance suite every store.Store backend runs
// (memory, bolt, etcd): Run checks the contract of store.Store as the hub
// relies on it, so the backends cannot drift apart.
package storetest
