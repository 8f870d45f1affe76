// Command controller is an example controller: it follows a folder of Kong
// configurations (one file per stream: default.yaml is stream "default"),
// pushes each change to a confighub with hubclient, waits until every sink
// applied it, and prints every entity a sink rejected as the Kubernetes
// object that produced it (from the k8s-kind, k8s-namespace and k8s-name
// tags the Kong Ingress Controller puts on every entity):
//
//	go run ./examples/controller --hub 127.0.0.1:7070 --dir ./configs [--token T] [--tls-ca ca.pem]
//	stream default generation 2: sink gw rejected Service default/nginx (service httproute.default.httproute-testing.3): port: value should be between 0 and 65535
//
// Its core (push, wait, map the errors) is controller.go; folder.go reads
// the folder, main.go the flags.
//
// Guarantees (each names the test that shows it):
//   - End to end with the real hub, its Kong sink and the Kong Admin API
//     emulator: a KIC configuration dropped in the folder is pushed and
//     reported applied; the same with an entity Kong refuses is reported
//     as the Kubernetes object that produced that entity, with Kong's
//     field error; a file touched without a change, and files that are not
//     *.yaml, *.yml or *.json, are not pushed
//     (TestRejectedEntityMappedToItsObject).
//   - The folder is read at start, then at every tick of an injected clock
//     (TestRunPollsOnItsClock).
//   - A push the hub could not take (unreachable) is tried again at the
//     next read; bytes the hub refused, or whose wait for the sinks timed
//     out (--wait, the sinks still applying are named), are not pushed
//     again until the file changes.
package main
