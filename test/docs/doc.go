// Package docs keeps the documentation true to the code, mechanically:
//
//   - Every test a doc.go names as the evidence of a guarantee exists, in
//     that package's folder or in the package the doc names with it (a
//     qualifier such as "engine's", "hubclienttest." or "e2e" before the
//     name, or "in internal/diffsync" after it), and a named subtest (the
//     part after a slash) exists too (TestDocGoNamesExistingTests).
//   - README.md, docs/*.md, deploy/README.md and examples/*/README.md show
//     only make targets the Makefile has (TestDocsMakeTargetsExist), flags
//     some command of the repository defines or an external program's flag
//     listed with its program (TestDocsMentionExistingFlags), and paths and
//     import paths that exist, so a moved package cannot leave its old path
//     behind (TestDocsNamePathsThatExist).
//   - docs/metrics.md has a row for every confighub_ series the code
//     registers, lists every state and result label value, and the
//     documents name no series the code does not register
//     (TestMetricsDocumented).
//   - The micro-benchmark table of docs/performance.md lists every
//     benchmark of the repository under a package that declares it
//     (TestBenchmarkTableIsComplete).
//   - README.md's layout names every folder under internal/, test/,
//     clients/ and cmd/ (TestReadmeLayoutNamesEveryPackage).
package docs
