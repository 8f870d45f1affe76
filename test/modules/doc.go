// Package modules checks the module boundary: a controller that imports the
// API module (its generated packages and api/hubclient) builds without the
// server's dependencies (etcd, bbolt, go-database-reconciler and deck,
// Prometheus), shown by TestClientModuleClosure.
package modules
