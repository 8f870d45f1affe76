package kongemu

// This file holds the checks of certificates, CA certificates and route
// paths (the rules both a declarative configuration and the entity API
// apply), and entityRules, which runs declarative.go's per-type rules on
// an entity the entity API is about to store or validate: Kong applies one
// schema in both modes.

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
)

// entityRules runs the field and entity rules of Kong's entity entityName
// (e.g. "routes", "ca_certificates") on data, an entity filled with its
// defaults; now is the clock of the checks that depend on time (a CA
// certificate's expiry). It returns the errors by field path, "@entity"
// for the entity checks.
func entityRules(entityName string, data map[string]any, now time.Time) fieldErrors {
	d := defsByKey[entityName]
	if d == nil || d.typ == "plugin" {
		return nil
	}
	// fields nil: unknown fields are the fill's (fillEntity) to report.
	e := &entity{def: &entityDef{typ: d.typ, key: d.key}, data: data, now: now}
	checkRules(e)
	if len(e.errs) == 0 {
		return nil
	}
	errs := fieldErrors{}
	for _, fe := range e.errs {
		if fe.Type == "entity" {
			l, _ := errs["@entity"].([]any)
			errs["@entity"] = append(l, fe.Message)
			continue
		}
		errs.add(strings.Split(fe.Field, "."), fe.Message)
	}
	return errs
}

// checkCertificate is typedefs.certificate and typedefs.key (the PEM must
// parse, kong/db/schema/typedefs.lua validate_certificate, validate_key)
// and the entity check that the key matches the certificate
// (kong/db/schema/entities/certificates.lua).
func checkCertificate(e *entity) {
	cert, key := e.str("cert"), e.str("key")
	if cert == "" {
		e.fieldErr("cert", "required field missing")
	}
	if key == "" {
		e.fieldErr("key", "required field missing")
	}
	var c *x509.Certificate
	var k crypto.Signer
	var err error
	if cert != "" {
		if c, err = parseCertificate(cert); err != nil {
			e.fieldErr("cert", "invalid certificate: "+err.Error())
		}
	}
	if key != "" {
		if k, err = parseKey(key); err != nil {
			e.fieldErr("key", "invalid key: "+err.Error())
		}
	}
	if c != nil && k != nil && !samePublicKey(c.PublicKey, k.Public()) {
		e.entityErr("certificate does not match key")
	}
}

// checkCACertificate is kong/db/schema/entities/ca_certificates.lua: one
// certificate that parses, not expired (checked when e.now is set), with
// the CA basic constraint.
func checkCACertificate(e *entity) {
	cert := e.str("cert")
	if cert == "" {
		e.fieldErr("cert", "required field missing")
		return
	}
	c, err := parseCertificate(cert)
	if err != nil {
		e.fieldErr("cert", "invalid certificate: "+err.Error())
		return
	}
	const tag = "-----BEGIN CERTIFICATE-----"
	if strings.Count(cert, tag) > 1 {
		e.entityErr("please submit only one certificate at a time")
		return
	}
	if !e.now.IsZero() && c.NotAfter.Before(e.now) {
		e.entityErr(`certificate expired, "Not After" time is in the past`)
		return
	}
	if !c.BasicConstraintsValid || !c.IsCA {
		e.entityErr(`certificate does not appear to be a CA because it is missing the "CA" basic constraint`)
	}
}

func parseCertificate(s string) (*x509.Certificate, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil, errors.New("x509.new: PEM_read_bio_X509_AUX() failed")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("x509.new: %w", err)
	}
	return c, nil
}

func parseKey(s string) (crypto.Signer, error) {
	b, _ := pem.Decode([]byte(s))
	if b == nil {
		return nil, errors.New("pkey.new:load_key: failed to read key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		if sg, ok := k.(crypto.Signer); ok {
			return sg, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("pkey.new:load_key: failed to parse key")
}

func samePublicKey(a, b crypto.PublicKey) bool {
	ab, err1 := x509.MarshalPKIXPublicKey(a)
	bb, err2 := x509.MarshalPKIXPublicKey(b)
	return err1 == nil && err2 == nil && bytes.Equal(ab, bb)
}

// checkRegexPaths is typedefs.router_paths' validate_path_with_regexes
// (kong/db/schema/typedefs.lua): a path starting with "~" must compile as
// a regex, else "invalid regex: '<regex>' (PCRE returned: ...)" at the
// path's position (paths.N, from 1). Go's regexp/syntax stands in for
// PCRE: only the errors both share (unbalanced parentheses and brackets,
// a repetition without operand, a trailing backslash) are reported, so a
// PCRE feature RE2 lacks (lookaround, backreferences) is accepted.
func checkRegexPaths(e *entity) {
	paths, _ := e.data["paths"].([]any)
	for i, p := range paths {
		s, _ := p.(string)
		re, ok := strings.CutPrefix(s, "~")
		if !ok {
			continue
		}
		_, err := syntax.Parse(re, syntax.Perl)
		var serr *syntax.Error
		if !errors.As(err, &serr) {
			continue
		}
		switch serr.Code {
		case syntax.ErrMissingParen, syntax.ErrUnexpectedParen, syntax.ErrMissingBracket,
			syntax.ErrTrailingBackslash, syntax.ErrMissingRepeatArgument:
			e.fieldErr("paths."+strconv.Itoa(i+1), fmt.Sprintf("invalid regex: '%s' (PCRE returned: %s)", re, serr.Code))
		}
	}
}

// checkKey is the entity checks of kong/db/schema/entities/keys.lua: jwk
// and pem are mutually exclusive, one is needed; a jwk must decode as JSON
// with the key's kid; a pem needs a private or a public key (typedefs.pem).
func checkKey(e *entity) {
	jwk, hasJWK := e.data["jwk"].(string)
	pem, hasPEM := e.data["pem"].(map[string]any)
	switch {
	case hasJWK && hasPEM:
		e.entityErr("only one or none of these fields must be set: 'jwk', 'pem'")
		return
	case !hasJWK && !hasPEM:
		e.entityErr("at least one of these fields must be non-empty: 'jwk', 'pem'")
		return
	}
	if hasJWK {
		var v map[string]any
		if err := json.Unmarshal([]byte(jwk), &v); err != nil {
			e.entityErr("could not json decode jwk string")
			return
		}
		if v["kid"] != e.data["kid"] {
			e.entityErr("kid in jwk.kid must be equal to keys.kid")
		}
		return
	}
	if pem["private_key"] == nil && pem["public_key"] == nil {
		e.entityErr("need to supply a PEM formatted public and/or private key.")
	}
}
