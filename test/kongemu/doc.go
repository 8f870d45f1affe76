// Package kongemu is a Kong Admin API emulator for tests. It is NOT Kong: no
// real Kong can run on the test machines, so this package answers the Admin
// API calls confighub makes, following Kong 3.9's source (kong/api/routes,
// kong/db/schema/entities, kong/db/errors.lua; each rule cites its file).
// test/kongemu/cmd/kong-emulator runs it by hand.
//
// Gateway is a DB-less gateway (POST /config, GET /status, GET /); WithDBMode
// and WithRoutes(api.Routes) put an EntityAPI (DB mode on the root, Konnect
// control planes under KonnectPrefix) behind it, sharing its faults and
// request log:
//
//	api := kongemu.NewEntityAPI()
//	gw := kongemu.New(kongemu.WithDBMode(), kongemu.WithRoutes(api.Routes))
//
// Faults (SetLatency, Hang/Release, DropNext, Script with Steps of status,
// Retry-After, body, drop, hang, latency; SetBodyLimit, Restart) apply to
// every Admin API request, also over HTTP under /_emulator/. Every Admin API
// request is logged (Requests, Count, Pushes) as soon as its status is
// known; Wait and WaitHanging block on an observable condition, so tests
// need no sleeps. Many gateways in one process share a Cache (WithCache).
//
// Guarantees:
//   - Every KIC golden fixture loads; Kong's field rules refuse what Kong refuses (TestFixturesAccepted, TestFieldRules, TestConfigFieldAndForm, TestCheckHash304).
//   - 400 answers have Kong 3.9.1's shape, flattened errors included (TestBrokenReferences, TestEntityErrorShapes).
//   - GET /status and GET / answer as Kong does; a restart empties the hash (TestStatusRootAndRestart).
//   - configuration_hash does not depend on formatting or JSON versus YAML (TestHashIndependentOfFormat).
//   - WithOSS refuses Enterprise entities and plugins (TestOSSRejectsEnterpriseFixtures).
//   - Entities are stored with Kong's defaults and errors (TestEntitySchemas, TestEntityStoresDefaults, TestEntityKongErrorBodies, TestEntityOSSCollections).
//   - go-kong v0.78.0's own integration tests pass in DB mode and DB-less, none listed as failing (make test-gokong, test/gokong).
package kongemu
