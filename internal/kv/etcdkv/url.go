package etcdkv

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Target is where a Store lives, as an etcd:// URL names it:
//
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ca=FILE&cert=FILE&key=FILE&majority-wait=DURATION&batch=0&update-reads=local]
//
// Without ca, cert and key the members are spoken to in plain HTTP; with
// them over TLS (ca: the CA that signed the members' certificates; cert
// and key: this client's certificate, for members that require one).
// majority-wait is Options.MajorityWait: how long a write waits for a
// majority of the members before it fails (a site cut off from the others
// answers its writes with ErrNoMajority after it). batch=0 turns group
// commit off (Options.NoBatch); batch=N lets N group-committed Txns
// travel at once (Options.InFlight; URLDefaultInFlight without the
// parameter: measured, one Txn in flight lowered creates/s across a WAN,
// eight kept the unbatched rate with fewer Raft entries).
// update-reads=local is Options.LocalUpdateReads (leader, the default:
// an Update's first read is linearizable).
type Target struct {
	Endpoints    []string
	Prefix       string
	CA           string
	Cert, Key    string
	MajorityWait time.Duration // 0: Options' default
	NoBatch      bool          // batch=0
	InFlight     int           // batch=N, N > 0
	LocalReads   bool          // update-reads=local
}

// URLDefaultInFlight is the batch=N an etcd:// URL without the
// parameter gets (docs/design/2026-11-25-etcd-group-commit.md).
const URLDefaultInFlight = 8

// ParseURL parses an etcd:// URL; the error says what was wrong.
func ParseURL(s string) (Target, error) {
	const want = "want etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ca=FILE&cert=FILE&key=FILE&majority-wait=DURATION&batch=0&update-reads=local]"
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return Target{}, fmt.Errorf("etcd URL %q: not etcd:// (%s)", s, want)
	}
	hosts, path, _ := strings.Cut(rest, "/")
	path, query, _ := strings.Cut(path, "?")
	var t Target
	for _, h := range strings.Split(hosts, ",") {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return Target{}, fmt.Errorf("etcd URL %q: member %q is no HOST:PORT (%s)", s, h, want)
		}
		t.Endpoints = append(t.Endpoints, h)
	}
	if path != "" {
		t.Prefix = "/" + path
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Target{}, fmt.Errorf("etcd URL %q: %v (%s)", s, err, want)
	}
	for k := range q {
		switch k {
		case "ca", "cert", "key", "majority-wait", "batch", "update-reads":
		default:
			return Target{}, fmt.Errorf("etcd URL %q: unknown parameter %q (%s)", s, k, want)
		}
	}
	t.CA, t.Cert, t.Key = q.Get("ca"), q.Get("cert"), q.Get("key")
	if w := q.Get("majority-wait"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d <= 0 {
			return Target{}, fmt.Errorf("etcd URL %q: majority-wait %q is no positive duration such as 10s (%s)", s, w, want)
		}
		t.MajorityWait = d
	}
	t.InFlight = URLDefaultInFlight
	if b := q.Get("batch"); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil || n < 0 {
			return Target{}, fmt.Errorf("etcd URL %q: batch %q is no number of Txns in flight (0: group commit off) (%s)", s, b, want)
		}
		t.NoBatch, t.InFlight = n == 0, n
	}
	switch r := q.Get("update-reads"); r {
	case "", "leader":
	case "local":
		t.LocalReads = true
	default:
		return Target{}, fmt.Errorf("etcd URL %q: update-reads %q is neither leader nor local (%s)", s, r, want)
	}
	if (t.Cert == "") != (t.Key == "") {
		return Target{}, fmt.Errorf("etcd URL %q: cert and key go together (%s)", s, want)
	}
	if t.Cert != "" && t.CA == "" {
		return Target{}, fmt.Errorf("etcd URL %q: a client certificate needs ca too (%s)", s, want)
	}
	return t, nil
}

// Options returns the Options of t: endpoints with their scheme, the
// prefix, and the TLS configuration read from t's files.
func (t Target) Options() (Options, error) {
	o := Options{Prefix: t.Prefix, MajorityWait: t.MajorityWait, NoBatch: t.NoBatch, InFlight: t.InFlight, LocalUpdateReads: t.LocalReads}
	scheme := "http://"
	if t.CA != "" {
		scheme = "https://"
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return Options{}, fmt.Errorf("etcd CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return Options{}, fmt.Errorf("etcd CA %s: no PEM certificate in it", t.CA)
		}
		o.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if t.Cert != "" {
			cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
			if err != nil {
				return Options{}, fmt.Errorf("etcd client certificate: %w", err)
			}
			o.TLS.Certificates = []tls.Certificate{cert}
		}
	}
	for _, e := range t.Endpoints {
		o.Endpoints = append(o.Endpoints, scheme+e)
	}
	return o, nil
}
