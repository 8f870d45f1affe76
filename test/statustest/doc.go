// Package statustest is the conformance suite of status.View backends: the
// local broker (internal/engine/status: the engine's view on one node,
// engine.View) and the etcd-backed view of replicas
// (internal/engine/status/etcdstatus: a broker copied to etcd by the Writer
// and read back by the Mirror, as between a replica's engine and every
// replica's view) run the same Run, so snapshot, resume and slow-watcher
// behaviour cannot drift apart between the two modes. The suite drives a
// view by putting statuses (an engine's come from its sinks): the engine
// behind the view, in both modes, is checked by enginetest.Run.
package statustest
