// Package config owns one Kong declarative configuration as the hub holds
// it (bytes as pushed, SHA-256, generation; immutable, shared by every sink
// and the store) and the checks before a push is acknowledged. JSON is read
// with jsontext, never decoded into Go values; YAML is converted to JSON
// once. Input is strict where parsers disagree; every refusal wraps
// ErrInvalid and says what and where.
//
// Guarantees:
//   - JSON accepted is exactly encoding/json.Valid's that is UTF-8 (no lone surrogate escape) with no key twice in an object (TestValidTable, TestValidMatchesStdlib, TestValidFixtures, FuzzValid).
//   - A refusal names the key path, the byte, the depth limit, and stays short (TestScanSaysWhatAndWhere, TestCheckRejectsWithClearMessage).
//   - A _format_version that is not a string is quoted as written, with the fix (TestFormatVersionQuotesWhatWasWritten).
//   - YAML is read as sigs.k8s.io/yaml reads it; duplicate keys and second documents are refused (TestCheckAcceptsEveryFixture, FuzzCheck).
//   - The Scanner gives Check's verdict whatever the cuts, and holds only open keys (TestScannerTable, TestScannerMatchesCheck, TestScannerFixtures, FuzzScanner, TestScannerEverySplit, TestScannerKeepsOnlyOpenKeys).
//   - Hashing feeds SHA-256 in pieces of at most 64 KiB (TestHasherPieces).
//   - Generations and forms share the bytes (TestWithGenerationShares, TestJSONConvertsYAMLOnceAndShares, TestYAMLConvertsJSONOnceAndShares).
//   - An empty stream name is DefaultStream (TestStreamName).
package config
