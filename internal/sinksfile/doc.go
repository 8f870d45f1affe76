// Package sinksfile reads the --sinks file: a YAML (or JSON) list of Sink
// in the same shape as PutSink's JSON (protojson field names, either
// lowerCamel or snake_case). It checks the shape and the protovalidate
// rules; kind-specific checks happen when the engine validates the sinks.
package sinksfile
