// Package builtin registers every sink kind that ships with the hub, the
// same way a user registers an in-process kind: Register(kind, factory).
package builtin
