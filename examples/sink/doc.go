// Package logsink is an example in-process sink kind, "log", to copy when
// writing your own: it writes one line per applied configuration to an
// io.Writer. A sink kind is a type implementing sink.Sink, a sink.Factory
// that checks the spec and builds the sink without network I/O, and a call
// to registry.Register("log", factory) before the hub starts (docs/plugins.md).
//
//	# sinks.yaml
//	- name: audit
//	  kind: log
//	  custom:
//	    prefix: "[audit] "
package logsink
