// Package authtest makes throw-away PKI for tests: a CA and certificates
// it signs, written as PEM files (for the hub's --tls-* flags, grpcurl's
// -cacert/-cert/-key, and confighubctl's --tls-*).
package authtest
