// Package deploytest checks what deploy/ ships against the Kubernetes and
// Prometheus types, in a module of its own so that k8s.io/api and
// Prometheus' PromQL parser stay out of the hub's dependency graph
// (make deploy-test runs it, with the pinned helm of ./bin).
//
// What it holds:
//   - helm lint --strict passes for every value set in the chart's ci/
//     folder (TestChartLints), and the chart refuses at render time a values
//     set the hub would refuse at start or that lacks its store
//     (TestChartRefuses).
//   - every object helm template renders for those value sets, and every
//     object of the kustomize manifests, decodes strictly into its
//     k8s.io/api (or Prometheus operator) type; selectors select the pods,
//     every mount has its volume, and every file a flag names lies under a
//     mount (TestRenderedObjectsDecode, TestManifestsDecode).
//   - every flag the chart renders is one the hub's --help lists; the
//     cluster listener's flags are checked once the hub has them
//     (TestChartFlagsExist).
//   - each mode renders its shape: single node a StatefulSet of one with a
//     claim and no budget, replicated a Deployment on etcd with a budget,
//     TLS its flags and TCP probes, the cluster listener its Service on 8005
//     only when enabled (TestChartModes).
//   - the single-node install equals deploy/single-node in substance
//     (TestChartSingleNodeMatchesManifests), and the hub starts with its
//     args and the files of its ConfigMap and Secret, listeners moved to
//     loopback (TestChartSingleNodeStarts).
//   - every PromQL query of deploy/grafana/confighub.json parses with
//     Prometheus' parser and names only metrics the hub registers
//     (TestDashboardQueries).
package deploytest
