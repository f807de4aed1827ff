package clusters

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"strings"
)

// DefaultFile is where the clusters file is looked for when none is named.
const DefaultFile = "/etc/tessera/clusters"

// Meta is one meta process of a cluster.
type Meta struct {
	Addr string // host:port
	Site string // "" when the file names none (or it came from DNS)
}

// Resolver is what Resolve needs of DNS; *net.Resolver has it.
type Resolver interface {
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Options say where Resolve looks.
type Options struct {
	// File is the clusters file; "" takes DefaultFile, which may be
	// absent (a file named explicitly must exist).
	File string
	// Resolver looks up the SRV records; nil takes net.DefaultResolver.
	Resolver Resolver
}

// Resolve returns the meta processes of the cluster name and where they
// were found ("file PATH" or "DNS SRV _tessera._tcp.NAME").
func Resolve(ctx context.Context, name string, opts Options) ([]Meta, string, error) {
	if err := CheckName(name); err != nil {
		return nil, "", err
	}
	file, explicit := opts.File, opts.File != ""
	if !explicit {
		file = DefaultFile
	}
	all, err := ReadFile(file)
	switch {
	case err == nil:
		if ms, ok := all[name]; ok {
			return ms, "file " + file, nil
		}
	case errors.Is(err, fs.ErrNotExist) && !explicit:
	default:
		return nil, "", err
	}
	r := opts.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	srvName := "_tessera._tcp." + name
	_, recs, err := r.LookupSRV(ctx, "tessera", "tcp", name)
	if err != nil || len(recs) == 0 {
		if err == nil {
			err = errors.New("no records")
		}
		return nil, "", fmt.Errorf("cluster %q: not in %s, and no DNS SRV records %s: %w", name, file, srvName, err)
	}
	var ms []Meta
	for _, rec := range recs {
		ms = append(ms, Meta{Addr: net.JoinHostPort(strings.TrimSuffix(rec.Target, "."), fmt.Sprint(rec.Port))})
	}
	return ms, "DNS SRV " + srvName, nil
}

// CheckName checks a cluster name: a DNS name (letters, digits, '-', '.'
// and '_'), since it is looked up as one.
func CheckName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("cluster name %q: want 1 to 253 characters", name)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_'
		if !ok {
			return fmt.Errorf("cluster name %q: %q is not a letter, digit, '-', '.' or '_'", name, r)
		}
	}
	return nil
}

// ReadFile reads a clusters file (see the package comment).
func ReadFile(file string) (map[string][]Meta, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("clusters file: %w", err)
	}
	defer f.Close()
	return Parse(f, file)
}

// Parse reads clusters from r; name names r in errors.
func Parse(r io.Reader, name string) (map[string][]Meta, error) {
	out := map[string][]Meta{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		cluster := fields[0]
		if err := CheckName(cluster); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if _, dup := out[cluster]; dup {
			return nil, fmt.Errorf("%s:%d: cluster %q is named twice", name, n, cluster)
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: cluster %q has no meta address (want NAME HOST:PORT[@SITE]...)", name, n, cluster)
		}
		var ms []Meta
		for _, f := range fields[1:] {
			addr, site, _ := strings.Cut(f, "@")
			if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
				return nil, fmt.Errorf("%s:%d: cluster %q: %q is not HOST:PORT[@SITE]", name, n, cluster, f)
			}
			ms = append(ms, Meta{Addr: addr, Site: site})
		}
		out[cluster] = ms
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// ParseSource splits a mount source NAME:/sub/dir into the cluster's name
// and the directory (cleaned, "/" when the source is NAME: or NAME:/).
// ok is false when src has no ":/" after a name (it is not a cluster
// source).
func ParseSource(src string) (name, dir string, ok bool, err error) {
	name, dir, found := strings.Cut(src, ":")
	if !found || name == "" || (dir != "" && !strings.HasPrefix(dir, "/")) {
		return "", "", false, nil
	}
	if err := CheckName(name); err != nil {
		return "", "", true, err
	}
	if dir == "" {
		dir = "/"
	}
	return name, path.Clean(dir), true, nil
}
