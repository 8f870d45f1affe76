// Package sinksfile reads the --sinks file (and `confighubctl sinks put
// -f`): a YAML or JSON list of Sink in PutSink's JSON shape (lowerCamel or
// snake_case), checked for shape and protovalidate rules.
//
// Guarantees:
//   - Durations are Go duration strings ("10s"); a bare number is refused, never guessed (TestGoDurationsAccepted, TestErrorsPointAtTheUsersText).
//   - Every error is an *Error naming the line and column as written, the entry and the field path as spelled; an unknown field or enum name lists the known ones (TestErrorsPointAtTheUsersText, TestLoadErrorsNameFileAndEntry).
//   - ParseOneOrMany also takes one sink (a mapping) (TestParseOneOrMany).
package sinksfile
