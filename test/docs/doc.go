// Package docs keeps the documentation true to the code, mechanically:
//   - every test a doc.go names exists (TestDocGoNamesExistingTests);
//   - docs show only make targets, flags and paths that exist (TestDocsMakeTargetsExist, TestDocsMentionExistingFlags, TestDocsNamePathsThatExist);
//   - docs/metrics.md lists every registered series and names no other (TestMetricsDocumented);
//   - the benchmark table lists every benchmark (TestBenchmarkTableIsComplete);
//   - README.md's layout names every package folder (TestReadmeLayoutNamesEveryPackage);
//   - doc.go files stay short and no comment or doc names an issue or session (TestDocGoIsAnOverview).
package docs
