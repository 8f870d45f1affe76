// Package tlsconfig builds the *tls.Config of an outbound connection (a Kong
// Admin API, Konnect) from a confighubv1.TLS spec, shared by the sink kinds in
// clients/.
//
// Guarantees:
//   - PEM fields take precedence over files (ca_pem over ca_file, cert_pem
//     and key_pem over cert_file and key_file), as the proto documents
//     (TestPEMTakesPrecedenceOverFile).
//   - A client certificate needs both halves; one without the other is an
//     error naming the missing half (TestHalfACertificateIsAnError).
//   - A custom CA replaces the system roots for that connection only
//     (TestCustomCAAndMinimumVersion).
//   - The minimum version is TLS 1.2 (TestCustomCAAndMinimumVersion).
//   - insecure_skip_verify is honoured only when set; every kind calls
//     WarnInsecure so that it is logged as a warning when the sink is made
//     (TestCustomCAAndMinimumVersion, TestWarnInsecureOnlyWhenSet).
//   - Files are read when Build is called (at sink creation), so a bad path
//     is reported by PutSink, not at the first apply
//     (TestHalfACertificateIsAnError: an unreadable cert_file).
package tlsconfig
