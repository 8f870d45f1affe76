// Package kongraph is the entity graph of a Kong declarative configuration and
// the fallback built from it when a gateway rejects some entities; pure, no I/O.
// Parse reads nested and flat forms alike; an entity depends on its parent and
// on what its foreign keys name. Closure(rejected) is the rejected entities and
// every one depending on them; Fallback removes them.
//
// Guarantees:
//   - Removing any entity of any KIC golden configuration leaves no dangling reference, checked by a separate walker (TestEveryFixtureRemovingAnyEntityLeavesNoDanglingReference, TestDanglingRefsSeesARemovedService).
//   - An excluded entity is kept at its previous version where its references resolve (TestFallbackKeepsThePreviousVersion).
package kongraph
