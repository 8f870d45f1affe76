// Package configdiff compares two Kong declarative configurations entity
// by entity, as deck diff does: which entities a move from one to the
// other creates, deletes and updates, and the changed fields of each
// update. It is pure: bytes in, a Diff out. The hub's DiffConfig, the
// per-sink diff of a failed sink and confighubctl diff show its output.
//
// Entities are identified the way Kong's reconciler identifies them (by id,
// else by name, username, plugin name and scope, upstream and target, a
// credential's key field, a certificate's cert and key: see flatten), and
// nested entities are compared flattened, with the foreign key their
// nesting stood for.
//
// What it guarantees:
//   - Applying Diff(a, b) to a's entities gives b's, for generated
//     configurations (TestApplyingTheDiffGivesTheTarget).
//   - Every kic-golden fixture against itself with one entity created,
//     one deleted or one field changed gives exactly that one change
//     (TestFixturesOneChange).
//   - No secret value is in a diff: secrets are redacted as GetConfig
//     redacts them (internal/redact's Entity), and a key-auth credential,
//     identified by its key, shows no name (TestNoSecretInTheDiff).
package configdiff
