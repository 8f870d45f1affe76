// Package sinksfile reads the --sinks file (and `confighubctl sinks put
// -f`): a YAML (or JSON) list of Sink in the same shape as PutSink's JSON
// (protojson field names, either lowerCamel or snake_case). It checks the
// shape and the protovalidate rules; kind-specific checks happen when the
// engine validates the sinks.
//
// Guarantees:
//   - Durations are Go duration strings ("10s", "1m30s", "250ms"); a bare
//     number (timeout: 10) is refused, saying durations are strings such as
//     "10s", never guessed as seconds or nanoseconds (TestGoDurationsAccepted,
//     TestErrorsPointAtTheUsersText).
//   - Every error is an *Error naming the line and column in the file as
//     written (YAML or JSON), the entry (index and name) and the field path
//     as the user spelled it; an unknown field lists the fields there, an
//     unknown enum name the names; a protovalidate violation is placed at
//     its field; nothing quotes a position in an internal JSON form
//     (TestErrorsPointAtTheUsersText, TestLoadErrorsNameFileAndEntry).
//   - ParseOneOrMany also takes one sink (a mapping) (TestParseOneOrMany).
package sinksfile
