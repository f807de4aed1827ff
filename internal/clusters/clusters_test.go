package clusters

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers SRV questions for _tessera._tcp.<name> from records
// on 127.0.0.1 (UDP) until the test ends; every other question gets
// NXDOMAIN.
func dnsServer(t *testing.T, records map[string][]dnsmessage.SRVResource) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			recs, ok := records[strings.ToLower(q.Name.String())]
			if !ok || q.Type != dnsmessage.TypeSRV {
				b = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError})
			}
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeSRV {
				for _, r := range recs {
					b.SRVResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, r)
				}
			}
			out, err := b.Finish()
			if err != nil {
				t.Errorf("dns reply: %v", err)
				return
			}
			pc.WriteTo(out, from)
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func srv(prio uint16, target string, port uint16) dnsmessage.SRVResource {
	return dnsmessage.SRVResource{Priority: prio, Weight: 1, Port: port, Target: dnsmessage.MustNewName(target)}
}

// TestResolveSRV: a name no clusters file holds is found through its SRV
// records, in priority order; a name without records fails naming the
// record looked for.
func TestResolveSRV(t *testing.T) {
	r := dnsServer(t, map[string][]dnsmessage.SRVResource{
		"_tessera._tcp.climate.example.": {srv(20, "meta2.example.", 7401), srv(10, "meta1.example.", 7400)},
	})
	opts := Options{File: filepath.Join(t.TempDir(), "none"), Resolver: r}
	if _, _, err := Resolve(context.Background(), "climate.example", opts); err == nil {
		t.Fatal("a clusters file given but missing is not an error")
	}
	opts.File = writeFile(t, "# empty\n")
	ms, from, err := Resolve(context.Background(), "climate.example", opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []Meta{{Addr: "meta1.example:7400"}, {Addr: "meta2.example:7401"}}
	if !reflect.DeepEqual(ms, want) || from != "DNS SRV _tessera._tcp.climate.example" {
		t.Fatalf("resolved %+v from %q, want %+v from DNS", ms, from, want)
	}
	_, _, err = Resolve(context.Background(), "nowhere.example", opts)
	if err == nil || !strings.Contains(err.Error(), "_tessera._tcp.nowhere.example") {
		t.Fatalf("unknown cluster: %v", err)
	}
}

func writeFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusters")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClustersFile: the file wins over DNS, sites are kept, and every
// malformed line is refused naming its line.
func TestClustersFile(t *testing.T) {
	r := dnsServer(t, map[string][]dnsmessage.SRVResource{"_tessera._tcp.lab.": {srv(1, "elsewhere.", 1)}})
	f := writeFile(t, "# clusters\n\nlab\t127.0.0.1:7400@a  127.0.0.2:7400@b\nsolo [::1]:7400\n")
	ms, from, err := Resolve(context.Background(), "lab", Options{File: f, Resolver: r})
	want := []Meta{{"127.0.0.1:7400", "a"}, {"127.0.0.2:7400", "b"}}
	if err != nil || !reflect.DeepEqual(ms, want) || from != "file "+f {
		t.Fatalf("lab: %+v from %q, %v", ms, from, err)
	}
	for _, bad := range []struct{ text, why string }{
		{"lab\n", ":1: cluster \"lab\" has no meta address"},
		{"lab h1\n", ":1: cluster \"lab\": \"h1\" is not HOST:PORT"},
		{"lab h:1\nlab h:2\n", ":2: cluster \"lab\" is named twice"},
		{"l/b h:1\n", ":1: cluster name \"l/b\""},
	} {
		_, err := Parse(strings.NewReader(bad.text), "F")
		if err == nil || !strings.Contains(err.Error(), "F"+bad.why) {
			t.Errorf("%q: %v, want %q", bad.text, err, bad.why)
		}
	}
}

func TestParseSource(t *testing.T) {
	for _, c := range []struct {
		src, name, dir string
		ok             bool
	}{
		{"lab:/proj/a/", "lab", "/proj/a", true},
		{"lab:", "lab", "/", true},
		{"lab:/", "lab", "/", true},
		{"/mnt/x", "", "", false},
		{"127.0.0.1:7400", "", "", false},
	} {
		name, dir, ok, err := ParseSource(c.src)
		if err != nil || name != c.name || dir != c.dir || ok != c.ok {
			t.Errorf("%q: %q %q %v %v", c.src, name, dir, ok, err)
		}
	}
	if _, _, ok, err := ParseSource("a b:/x"); !ok || err == nil {
		t.Errorf("a bad name: ok=%v err=%v", ok, err)
	}
}
