// Package config owns one Kong declarative configuration as the hub holds
// it: the bytes as pushed, their SHA-256, the stream's generation, and the
// checks that run before a push is acknowledged.
//
// Check reads JSON with jsontext (no decode into Go values) and finds
// _format_version on the way; YAML is converted to JSON once, there, and the
// Config keeps that JSON for every sink to share. An upload's chunks are
// checked as they arrive by a Scanner with the same verdict. Input is strict
// where parsers disagree (Kong keeps the last of two equal keys, gjson the
// first; Kong refuses what is not UTF-8), and every refusal wraps ErrInvalid
// and says what and where.
//
// A Config is immutable once built and shared by every sink of its stream
// and by the store: the bytes are held once. An empty stream name designates
// DefaultStream (StreamName).
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
