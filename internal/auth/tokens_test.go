package auth

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenRoundTrip(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tok, err := ca.Token(TokenRequest{Name: "alice", Role: RoleAdmin, Root: "/proj", Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	clock := now
	v, err := NewTokenVerifier(ca.Cert, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Identity{Name: "alice", Role: RoleAdmin, Root: "/proj", Via: "token"}); id != want {
		t.Fatalf("identity %+v, want %+v", id, want)
	}
	// Expired: at its expiry and after.
	clock = now.Add(time.Hour)
	if _, err := v.Verify(tok); !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired token: err %v, want ErrUnauthenticated naming the expiry", err)
	}
}

func TestTokenRefused(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := ca.Token(TokenRequest{Name: "bob", Role: RoleClientRO, Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := other.Token(TokenRequest{Name: "bob", Role: RoleClientRO, Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Forged: the payload of a client-ro token rewritten to admin, the
	// signature kept.
	p64, sig, _ := strings.Cut(strings.TrimPrefix(tok, tokenPrefix), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(p64)
	forged := tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), "client-ro", "admin", 1))) + "." + sig
	v, err := NewTokenVerifier(ca.Cert, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("good token refused: %v", err)
	}
	for name, bad := range map[string]string{
		"forged":    forged,
		"other CA":  otherTok,
		"empty":     "",
		"garbage":   "tt1.!!!.???",
		"no prefix": strings.TrimPrefix(tok, tokenPrefix),
		"truncated": tok[:len(tok)-4],
	} {
		if id, err := v.Verify(bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s token: got %+v, %v; want ErrUnauthenticated", name, id, err)
		}
	}
}

func TestTokenRequestChecked(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []TokenRequest{
		{Name: "", Role: RoleAdmin, Validity: time.Hour},
		{Name: "a|b", Role: RoleAdmin, Validity: time.Hour},
		{Name: "a", Role: "root", Validity: time.Hour},
		{Name: "a", Role: RoleAdmin, Root: "rel", Validity: time.Hour},
		{Name: "a", Role: RoleAdmin},
	} {
		if _, err := ca.Token(req, time.Now()); err == nil {
			t.Errorf("token %+v signed", req)
		}
	}
}

func TestCredentialsVerifyTokens(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c := issue(t, ca, Request{Name: "b0", Role: RoleBlockd})
	tok, err := ca.Token(TokenRequest{Name: "ops", Role: RoleAdmin, Validity: time.Minute}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if id, err := c.Tokens().Verify(tok); err != nil || id.Name != "ops" || id.Role != RoleAdmin {
		t.Fatalf("Credentials.Tokens: %+v, %v", id, err)
	}
}

func TestCAOnlyCredentials(t *testing.T) {
	ca, err := NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := ca.Save(dir); err != nil {
		t.Fatal(err)
	}
	c, err := LoadCAOnly(dir+"/"+CACertFile, "tt1.x")
	if err != nil {
		t.Fatal(err)
	}
	if c.HasCert() || c.Token != "tt1.x" || len(c.ClientConfig().Certificates) != 0 {
		t.Fatalf("CA-only credentials: HasCert %v, token %q, %d client certificates", c.HasCert(), c.Token, len(c.ClientConfig().Certificates))
	}
	if _, err := LoadCAOnly(dir+"/nothing", ""); err == nil {
		t.Fatal("a missing CA file loaded")
	}
}
