// Package tlsconfig builds the *tls.Config of a sink kind's outbound
// connection (a Kong Admin API, Konnect) from a confighubv1.TLS spec.
//
// Guarantees:
//   - PEM fields take precedence over files, as the proto documents (TestPEMTakesPrecedenceOverFile).
//   - A client certificate needs both halves; one alone is an error naming the other (TestHalfACertificateIsAnError).
//   - A custom CA replaces the system roots for that connection only; TLS 1.2 at least (TestCustomCAAndMinimumVersion).
//   - insecure_skip_verify is honoured only when set, and WarnInsecure logs it (TestCustomCAAndMinimumVersion, TestWarnInsecureOnlyWhenSet).
//   - Files are read by Build, at sink creation, so PutSink reports a bad path (TestHalfACertificateIsAnError).
package tlsconfig
