// Package docs keeps the documentation true to the code, mechanically:
//
//   - Every test a doc.go names as the evidence of a guarantee exists, in
//     that package's folder or in the package the doc names with it (a
//     qualifier such as "engine's", "hubclienttest." or "e2e" before the
//     name, or "in internal/diffsync" after it), and a named subtest (the
//     part after a slash) exists too (TestDocGoNamesExistingTests).
package docs
