// Package logsink is an example in-process sink kind, "log", to copy when
// writing your own. It writes one line per applied configuration to an
// io.Writer (stdout by default).
//
// A sink kind is three things:
//
//  1. a type implementing sink.Sink: Apply(ctx, cfg) makes the destination
//     hold cfg and returns nil, or an error saying how to treat the
//     failure (a *sink.Error: Permanent for a rejection, RetryAfter when the
//     destination asked to wait; any other error is retried with backoff);
//     Describe() states what the destination accepts;
//  2. a sink.Factory that checks the spec (here the settings under
//     "custom:") and builds the sink, without network I/O;
//  3. a call to registry.Register("log", factory) before the hub starts.
//
// The engine calls Apply for one sink at a time, always with the newest
// configuration, with a ctx that carries the per-attempt timeout; the
// Config's bytes are shared with every other sink, so they are read only.
// See docs/plugins.md.
//
// A sink of this kind in the --sinks file:
//
//	# sinks.yaml
//	- name: audit
//	  kind: log
//	  custom:
//	    prefix: "[audit] "
package logsink
