// Package hubclient is the Go client a controller uses to talk to a
// confighub. A controller's loop is push, wait, report:
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
// Guarantees (hubclienttest: tests against a real hub, in the root module):
//   - Push above the unary limit uploads in chunks; a rejected upload returns the hub's status (hubclienttest.TestPushSwitchesToUploadAboveTheUnaryLimit).
//   - An upload sends Push.Hash as its expected hash (hubclienttest.TestPushUploadsWithTheCallersHash).
//   - Watch resumes from its last revision and ends on permanent errors (hubclienttest.TestWatchResumesAfterDisconnect, hubclienttest.TestWatchReturnsPermanentErrors).
//   - WithWatchState reports each break and each reconnect (TestWatchStateReportsBreaksAndReconnects).
//   - Wait returns once every sink applied, with each sink's status (TestWaitReturnsWhenEverySinkApplied).
//   - Wait returns a *RejectedError at the first rejection, with entity errors and tags (TestWaitReturnsRejectionWithEntityErrors).
//   - Wait resumes, and ends with ErrNoSinks, its ctx or Watch's permanent errors (TestWaitResumesAfterDisconnect, TestWaitNoSinks, TestWaitEndsWithItsContext, TestWaitTimeoutSaysWhoIsPending, TestWaitReturnsPermanentWatchErrors).
//   - StatusView folds watch events into a stream's status and counts sinks by outcome as they come (TestStatusViewFolds, TestStatusViewTarget); Wait, confighubctl status --watch and the bench read it.
//   - On a real hub and the Kong emulator, a rejected entity reaches the caller with its k8s-* tags (hubclienttest.TestWaitOnARealHub, examples/controller TestRejectedEntityMappedToItsObject).
//   - A generation never counts a sink ahead of its APPLIED event (hubclienttest.TestWatchNeverCountsAheadOfSinks).
package hubclient
