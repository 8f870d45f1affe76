// Package hubclient is the Go client a controller uses to talk to a
// confighub: Push sends a configuration and switches on its own from
// PushConfig to a chunked UploadConfig above the unary limit; Watch follows
// a stream's status and resumes from the last revision it saw after a
// disconnect.
package hubclient
