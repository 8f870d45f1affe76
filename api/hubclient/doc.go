// Package hubclient is the Go client a controller uses to talk to a
// confighub: Push sends a configuration and switches on its own from
// PushConfig to a chunked UploadConfig above the unary limit; Watch follows
// a stream's status and resumes from the last revision it saw after a
// disconnect; Wait, built on Watch, waits until every sink of a stream has
// applied a generation.
//
// A controller's loop is push, wait, report:
//
//	res, err := c.Push(ctx, hubclient.Push{Stream: "default", Config: kongYAML})
//	_, err = c.Wait(ctx, "default", res.GetGeneration())
//	var rej *hubclient.RejectedError
//	if errors.As(err, &rej) {
//		for _, ee := range rej.EntityErrors() {
//			name, _ := hubclient.Tag(ee.GetEntityTags(), "k8s-name")
//			// mark the Kubernetes object name as failed with ee.GetErrors()
//		}
//	}
//
// Guarantees (each names the test that shows it; the tests that need a
// real hub live in the root module, in test/hubclienttest, since this
// module must not import the server; the others run on an in-process fake
// ConfigHubService here):
//   - Push above the unary limit uploads in chunks and reports progress; a
//     rejected upload returns the hub's status, not io.EOF
//     (hubclienttest.TestPushSwitchesToUploadAboveTheUnaryLimit).
//   - An upload sends Push.Hash, when set, as its expected hash instead of
//     hashing the config: the hub refuses a config that does not hash to
//     it and acks one that does; WithUnaryLimit(0) uploads every push,
//     an empty one too (hubclienttest.TestPushUploadsWithTheCallersHash).
//   - Watch reconnects with backoff and resumes from the last revision it
//     saw (hubclienttest.TestWatchResumesAfterDisconnect); NotFound,
//     PermissionDenied, Unauthenticated, InvalidArgument and Unimplemented
//     end it (hubclienttest.TestWatchReturnsPermanentErrors).
//   - WithWatchState tells its function of each break Watch retries, with
//     the error, and of the hub's answer to a new stream after it (its
//     header; not a stream refused at once), before the events that
//     follow; an error that ends Watch is returned, not reported
//     (TestWatchStateReportsBreaksAndReconnects).
//   - Wait returns once every sink of the stream has applied the
//     generation or a later one, with every sink's status at that revision
//     sorted by name; sinks added or removed meanwhile are counted in or
//     out (TestWaitReturnsWhenEverySinkApplied).
//   - Wait returns a *RejectedError (errors.Is ErrRejected) as soon as one
//     sink rejected the generation (or a later one before applying it),
//     without waiting for the others; it carries the rejecting sinks'
//     statuses and, through EntityErrors, every rejected entity with its
//     tags, which Tag reads (TestWaitReturnsRejectionWithEntityErrors).
//   - Wait resumes after a disconnect like Watch and does not start over
//     (TestWaitResumesAfterDisconnect); it returns ErrNoSinks for a stream
//     without sinks (TestWaitNoSinks), ctx's error when ctx ends
//     (TestWaitEndsWithItsContext) with each sink's status so far
//     (TestWaitTimeoutSaysWhoIsPending), and Watch's permanent errors
//     (TestWaitReturnsPermanentWatchErrors).
//   - Against the real hub, Wait returns every sink applied, then a
//     rejection with its entity and tags (hubclienttest.TestWaitOnARealHub);
//     with the Kong sink and the Kong Admin API emulator, a rejected entity
//     reaches the caller with its k8s-* tags (examples/controller
//     TestRejectedEntityMappedToItsObject).
//   - A generation event never counts a sink's apply before that sink's
//     APPLIED event came (hubclienttest.TestWatchNeverCountsAheadOfSinks).
package hubclient
