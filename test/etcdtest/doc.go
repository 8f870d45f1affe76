// Package etcdtest runs a single-member etcd server inside a test process
// (go.etcd.io/etcd/server/v3/embed) on 127.0.0.1 ports in a temp dir, for
// the tests of the etcd store and of hub replicas.
package etcdtest
