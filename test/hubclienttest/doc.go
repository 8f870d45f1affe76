// Package hubclienttest runs the Go client (api/hubclient) against a real
// in-process hub. It lives in the server module because the client's own
// module must not depend on the server.
package hubclienttest
