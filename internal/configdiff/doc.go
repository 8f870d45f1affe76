// Package configdiff compares two Kong declarative configurations entity by
// entity, as deck diff does (created, deleted, updated with each changed field),
// for DiffConfig, the per-sink diff, confighubctl diff and the status page; Count
// gives the entity counts the hub records with a push. Pure: bytes in, a Diff out;
// entities are identified as Kong's reconciler does (flatten), nested ones flat.
//
// Guarantees:
//   - Applying Diff(a, b) to a's entities gives b's (TestApplyingTheDiffGivesTheTarget).
//   - A kic-golden fixture with one entity created, deleted or one field changed gives exactly that change (TestFixturesOneChange).
//   - No secret is in a diff: redacted as GetConfig redacts (redact.Entity), a key-auth key never a name (TestNoSecretInTheDiff).
//   - Count finds the entities the diff finds, in one pass (TestCountAsTheDiffCounts).
package configdiff
