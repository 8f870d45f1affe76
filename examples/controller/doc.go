// Command controller is an example controller: it follows a folder of Kong
// configurations (one file per stream: default.yaml is stream "default"),
// pushes each change with hubclient, waits until every sink applied it, and
// prints every entity a sink rejected as the Kubernetes object of its k8s-*
// tags:
//
//	go run ./examples/controller --hub 127.0.0.1:7070 --dir ./configs [--token T] [--tls-ca ca.pem]
//	stream default generation 2: sink gw rejected Service default/nginx (service httproute.default.httproute-testing.3): port: value should be between 0 and 65535
//
// Guarantees:
//   - With the real hub, its Kong sink and the emulator, a rejection is reported as its Kubernetes object; unchanged files are not pushed (TestRejectedEntityMappedToItsObject).
//   - The folder is read at start and at every tick of an injected clock (TestRunPollsOnItsClock).
package main
