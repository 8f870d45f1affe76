// Package config owns one Kong declarative configuration as the hub holds
// it: the bytes as pushed, their SHA-256, the stream's generation, and the
// checks that run before a push is acknowledged.
//
// The acknowledgement path must not decode a JSON configuration into Go
// values: Check runs one pass over the bytes (Scan's), which also finds
// _format_version among the top-level keys. Scan and the streaming Scanner
// share one fast path that jumps from token to token and calls nothing
// for the common tokens: strings skipped sixteen bytes per test (a mark of
// '"', '\\', control and non-ASCII bytes in six operations a word,
// TestSpecialMarksFirst), integers digit by digit, each key of an inner
// object deduplicated in place through a bloom filter of a hash read with
// two loads (the hash every other path uses, TestKeyHashAt), no
// allocation per token. Helpers take keys it cannot record in place,
// escapes, non-ASCII text and other numbers; a byte-wise state machine
// takes only the tokens cut by the end of a piece, the _format_version
// value and whatever is wrong, so every refusal is worded by one piece of
// code. Checking a configuration allocates once whatever its size
// (TestScanAllocatesOnce); BenchmarkScan measures it beside a pass that
// only reads every byte. YAML must be parsed to be checked, so Check
// converts it to JSON once, there (and reads _format_version with gjson),
// and the Config keeps that JSON for every sink to share. The YAML form of
// a JSON push is likewise made once, on first use (YAML), and shared.
//
// Hasher feeds SHA-256 at most 64 KiB per call (TestHasherPieces), and
// Hash is a Hasher's sum above 64 KiB: SHA-256's assembly cannot be
// preempted, and a stop of the world the garbage collector asks for waits
// for the call in progress, with every goroutine of the process; one call
// over a 200 MiB configuration would hold them for about 160 ms.
//
// Input is strict where parsers disagree (Kong keeps the last of two equal
// keys, gjson the first; Kong refuses what is not UTF-8), and every refusal
// wraps ErrInvalid and says what and where:
//
//   - Scan accepts exactly what encoding/json.Valid accepts that is also
//     UTF-8 and holds no key twice in one object (compared after
//     unescaping, at any depth, also in objects of more than bigKeys (32)
//     keys and for keys of equal hash): TestValidTable,
//     TestValidMatchesStdlib, TestValidFixtures and FuzzValid compare it
//     with that reference.
//   - A refusal names the key path of a duplicate key
//     (consumers[0].keyauth_credentials[0].key), the byte and value of
//     invalid UTF-8, the nesting limit (MaxDepth, 10000) of too deep a
//     document, and stays short for hostile inputs (TestScanSaysWhatAndWhere,
//     TestCheckRejectsWithClearMessage). A _format_version that is not a
//     string is quoted as the document writes it (an unquoted YAML 3.0 as
//     3.0, not the 3 it reads as; at most 64 bytes), with the fix when
//     quoting it gives a version Kong accepts (got 3.0 (a number): quote
//     it, "3.0"), by Check and the Scanner alike
//     (TestFormatVersionQuotesWhatWasWritten).
//   - YAML is read as sigs.k8s.io/yaml reads it (YAML 1.1, objects with
//     sorted keys: TestCheckAcceptsEveryFixture, FuzzCheck), but a mapping
//     with a key twice (as JSON keys: 1 and "1" are equal), a second
//     document and nesting over MaxDepth are refused
//     (TestCheckRejectsWithClearMessage).
//
// An upload's chunks are checked as they arrive by a Scanner: the same
// verdict, strictness (duplicate keys, UTF-8, MaxDepth) and
// _format_version as Check for JSON, whatever the cuts
// (TestScannerTable, TestScannerMatchesCheck, TestScannerFixtures,
// FuzzScanner: a differential test against Check and Scan on random
// pieces; TestScannerEverySplit: Check's very error, offset and path, for
// a cut at every byte of every fixture), failing at the first bad byte,
// and holding only the open objects' keys: a key borrows the piece it was
// read from until Write returns, then is copied, and the copies go when
// their object closes (TestScannerKeepsOnlyOpenKeys).
//
// A Config is immutable once built and is shared by every sink of its
// stream and by the store that holds it: nobody modifies Raw, Labels or
// the bytes JSON and YAML return, so the bytes are held once. A store
// assigns the generation with WithGeneration, which keeps the bytes and
// the JSON and YAML forms, made once for both (TestWithGenerationShares,
// TestJSONConvertsYAMLOnceAndShares, TestYAMLConvertsJSONOnceAndShares).
//
// An empty stream name designates DefaultStream (StreamName,
// TestStreamName); the hub resolves it where a request enters and where a
// sink spec is checked, so that stores, engine and status never see "".
package config
