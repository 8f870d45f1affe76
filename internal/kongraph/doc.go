// Package kongraph is the entity graph of a Kong declarative configuration
// and the fallback built from it when a gateway rejects some entities. It
// is pure: bytes in, bytes out, no I/O.
//
// What it guarantees:
//   - Parse reads the nested and the flat forms alike. An entity depends on
//     the entity it is nested in and on what its foreign keys name: a route
//     on its service; a plugin on its route, service, consumer or consumer
//     group; a credential (keyauth_credentials, basicauth_credentials,
//     hmacauth_credentials, jwt_secrets, acls, mtls_auth_credentials,
//     oauth2_credentials) on its consumer; a target on its upstream; an SNI
//     on its certificate; a service or upstream on its client certificate
//     and a service on its CA certificates; a consumer-group membership on
//     the group and the consumer; a degraphql route on its service.
//   - Closure(rejected) is the rejected entities and, transitively, every
//     entity that depends on one. Fallback removes them: removing any one
//     entity of any of the 58 KIC golden configurations leaves no foreign
//     key naming a missing entity, as checked by a walker written apart
//     from this graph, and removes exactly what it reports
//     (TestEveryFixtureRemovingAnyEntityLeavesNoDanglingReference,
//     TestDanglingRefsSeesARemovedService shows the walker fails).
//   - With the previous configuration, an excluded entity whose previous
//     version's foreign keys resolve in the result is kept at that version
//     (reported PreviousKept), and an excluded dependant whose own keys
//     resolve again gets its new version back; entities placed back are
//     written flat, with their parent as a foreign key
//     (TestFallbackKeepsThePreviousVersion).
package kongraph
