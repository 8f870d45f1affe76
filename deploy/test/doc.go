// Package deploytest checks deploy/ (the Helm chart, the kustomize
// manifests, the Grafana dashboard) in a module of its own, so k8s.io/api
// and Prometheus' parser stay out of the hub's graph; make deploy-test runs
// it with the pinned helm.
//   - helm lint passes for the ci/ value sets; bad values are refused at render (TestChartLints, TestChartRefuses)
//   - every object decodes strictly into its type and is wired (TestRenderedObjectsDecode, TestManifestsDecode)
//   - every rendered flag is in the hub's --help (TestChartFlagsExist); each mode has its shape (TestChartModes)
//   - single node equals deploy/single-node (TestChartSingleNodeMatchesManifests) and starts (TestChartSingleNodeStarts)
//   - every dashboard query parses and names registered metrics (TestDashboardQueries)
package deploytest
