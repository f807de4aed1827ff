package etcdkv

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	got, err := ParseURL("etcd://h1:2379,127.0.0.1:2380/tessera/a?ca=/c.pem&cert=/x.pem&key=/x.key")
	want := Target{Endpoints: []string{"h1:2379", "127.0.0.1:2380"}, Prefix: "/tessera/a", CA: "/c.pem", Cert: "/x.pem", Key: "/x.key", InFlight: URLDefaultInFlight}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseURL = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseURL("etcd://h:1/p?majority-wait=5s"); err != nil || got.MajorityWait != 5*time.Second {
		t.Fatalf("majority-wait=5s: %+v, %v", got, err)
	} else if o, err := got.Options(); err != nil || o.MajorityWait != 5*time.Second {
		t.Fatalf("majority-wait=5s: Options %+v, %v", o, err)
	}
	if got, err := ParseURL("etcd://h:1/p?batch=0"); err != nil || !got.NoBatch {
		t.Fatalf("batch=0: %+v, %v", got, err)
	} else if o, err := got.Options(); err != nil || !o.NoBatch {
		t.Fatalf("batch=0: Options %+v, %v", o, err)
	}
	if got, err := ParseURL("etcd://h:1/p?update-reads=local"); err != nil || !got.LocalReads {
		t.Fatalf("update-reads=local: %+v, %v", got, err)
	} else if o, err := got.Options(); err != nil || !o.LocalUpdateReads {
		t.Fatalf("update-reads=local: Options %+v, %v", o, err)
	}
	if got, err := ParseURL("etcd://h:1/p?batch=4"); err != nil || got.NoBatch || got.InFlight != 4 {
		t.Fatalf("batch=4: %+v, %v", got, err)
	} else if o, err := got.Options(); err != nil || o.InFlight != 4 {
		t.Fatalf("batch=4: Options %+v, %v", o, err)
	}
	if got, err := ParseURL("etcd://h:1"); err != nil || got.Prefix != "" {
		t.Fatalf("no prefix: %+v, %v", got, err)
	}
	for _, c := range []struct{ in, says string }{
		{"http://h:1/p", "not etcd://"},
		{"etcd://h/p", `member "h" is no HOST:PORT`},
		{"etcd://h:1,/p", `member "" is no HOST:PORT`},
		{"etcd://h:1/p?tls=1", `unknown parameter "tls"`},
		{"etcd://h:1/p?cert=a", "cert and key go together"},
		{"etcd://h:1/p?cert=a&key=b", "needs ca"},
		{"etcd://h:1/p?majority-wait=soon", `majority-wait "soon" is no positive duration`},
		{"etcd://h:1/p?batch=no", `batch "no" is no number of Txns in flight`},
		{"etcd://h:1/p?update-reads=any", `update-reads "any" is neither leader nor local`},
		{"etcd://h:1/p?majority-wait=-1s", `majority-wait "-1s" is no positive duration`},
	} {
		_, err := ParseURL(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "want etcd://") {
			t.Errorf("ParseURL(%q) = %v; want an error saying %q and what is expected", c.in, err, c.says)
		}
	}
}
