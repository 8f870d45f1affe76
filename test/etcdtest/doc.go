// Package etcdtest runs a single-member etcd server on 127.0.0.1 ports in a
// temp dir, for the tests of the etcd store and of hub replicas: embedded
// in the test process (go.etcd.io/etcd/server/v3/embed), or the binary
// named by $CONFIGHUB_ETCD_BIN (Start), or a given binary (StartProcess).
package etcdtest
