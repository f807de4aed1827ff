package auth

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Tokens are how a person runs an admin command without a certificate of
// their own: `tessera certs token NAME --role ROLE` prints one, the command
// sends it as "Authorization: Bearer TOKEN" (block servers) or in the RPC's
// metadata (meta), and every role verifies it with nothing but the CA
// certificate it already trusts: no token database, no revocation list, so
// keep their validity short.
//
// Layout: "tt1." + base64url(payload) + "." + base64url(signature), where
// payload is "name|role|root|expiry" (expiry in Unix seconds) and signature
// is the CA key's ASN.1 ECDSA signature of the payload's SHA-256. The "tt1"
// prefix names the format's version.
const tokenPrefix = "tt1."

// TokenRequest describes a token to sign.
type TokenRequest struct {
	Name     string
	Role     Role
	Root     string // "" for the whole namespace
	Validity time.Duration
}

// Token signs a token for req valid from now for req.Validity.
func (ca *CA) Token(req TokenRequest, now time.Time) (string, error) {
	if req.Name == "" || strings.ContainsAny(req.Name, "|\n") {
		return "", fmt.Errorf("token: name %q must be non-empty and hold no '|' or newline", req.Name)
	}
	if _, err := ParseRole(string(req.Role)); err != nil {
		return "", fmt.Errorf("token %s: %w", req.Name, err)
	}
	root, err := CleanRoot(req.Root)
	if err != nil {
		return "", fmt.Errorf("token %s: %w", req.Name, err)
	}
	if root == "/" {
		root = "" // as in a certificate without a root
	}
	if strings.Contains(root, "|") {
		return "", fmt.Errorf("token %s: root %q must hold no '|'", req.Name, root)
	}
	if req.Validity <= 0 {
		return "", fmt.Errorf("token %s: validity %v must be positive", req.Name, req.Validity)
	}
	payload := strings.Join([]string{req.Name, string(req.Role), root, strconv.FormatInt(now.Add(req.Validity).Unix(), 10)}, "|")
	sum := sha256.Sum256([]byte(payload))
	sig, err := ecdsa.SignASN1(rand.Reader, ca.Key, sum[:])
	if err != nil {
		return "", fmt.Errorf("token %s: sign: %w", req.Name, err)
	}
	enc := base64.RawURLEncoding
	return tokenPrefix + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(sig), nil
}

// CAVerifier verifies tokens signed by one CA; it implements TokenVerifier.
type CAVerifier struct {
	key *ecdsa.PublicKey
	now func() time.Time
}

var _ TokenVerifier = (*CAVerifier)(nil)

// NewTokenVerifier returns the verifier of tokens signed by the CA whose
// certificate is ca; now is the clock expiry is checked against (nil: the
// real one).
func NewTokenVerifier(ca *x509.Certificate, now func() time.Time) (*CAVerifier, error) {
	key, ok := ca.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("token verifier: CA %q has no ECDSA key", ca.Subject.CommonName)
	}
	if now == nil {
		now = time.Now
	}
	return &CAVerifier{key: key, now: now}, nil
}

// Verify checks tok's signature and expiry and returns whose it is.
func (v *CAVerifier) Verify(tok string) (Identity, error) {
	id, err := v.verify(tok)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: token: %v", ErrUnauthenticated, err)
	}
	return id, nil
}

func (v *CAVerifier) verify(tok string) (Identity, error) {
	body, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return Identity{}, errors.New("not a tessera token (want tt1.…)")
	}
	p64, s64, ok := strings.Cut(body, ".")
	if !ok {
		return Identity{}, errors.New("malformed")
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p64)
	if err != nil {
		return Identity{}, errors.New("malformed payload")
	}
	sig, err := enc.DecodeString(s64)
	if err != nil {
		return Identity{}, errors.New("malformed signature")
	}
	sum := sha256.Sum256(payload)
	if !ecdsa.VerifyASN1(v.key, sum[:], sig) {
		return Identity{}, errors.New("bad signature (forged, altered, or signed by another CA)")
	}
	f := strings.Split(string(payload), "|")
	if len(f) != 4 {
		return Identity{}, errors.New("malformed payload")
	}
	role, err := ParseRole(f[1])
	if err != nil {
		return Identity{}, err
	}
	exp, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return Identity{}, errors.New("malformed expiry")
	}
	if now := v.now(); !now.Before(time.Unix(exp, 0)) {
		return Identity{}, fmt.Errorf("%q expired at %s", f[0], time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	return Identity{Name: f[0], Role: role, Root: f[2], Via: "token"}, nil
}
