// Package enginetest provides an in-process fake sink for tests of the
// engine and of anything built on it (the hub, e2e tests): a kind whose
// sinks can be made slow (on a fake clock), hung, failing, panicking or
// blocked until released, and that record what they applied.
package enginetest
