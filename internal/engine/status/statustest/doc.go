// Package statustest is the conformance suite of status.View backends: the
// local broker (internal/engine/status) and the etcd-backed view of replicas
// (internal/engine/status/etcdstatus) run the same Run, so snapshot, resume and
// slow-watcher behaviour cannot drift apart between the two modes.
package statustest
