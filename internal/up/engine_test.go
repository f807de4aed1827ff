package up

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseMetaDB(t *testing.T) {
	for _, c := range []struct {
		in   string
		want MetaDB
	}{
		{"pebble:/var/t/meta", MetaDB{EnginePebble, "/var/t/meta"}},
		{"pebble:///var/t/meta", MetaDB{EnginePebble, "/var/t/meta"}},
		{"pebble:rel/dir/", MetaDB{EnginePebble, "rel/dir"}},
		{"bolt:/x/meta.db", MetaDB{EngineBolt, "/x/meta.db"}},
		{"bolt:///x/meta.db", MetaDB{EngineBolt, "/x/meta.db"}},
		{"mem:", MetaDB{EngineMem, ""}},
		{"mem://", MetaDB{EngineMem, ""}},
		{"etcd://h1:2379,h2:2379/tessera", MetaDB{EngineEtcd, "h1:2379,h2:2379/tessera"}},
	} {
		got, err := ParseMetaDB(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseMetaDB(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, says string }{
		{"/var/t/meta", "no engine"},
		{"rocks:/x", `unknown engine "rocks"`},
		{"pebble:", "needs a path"},
		{"bolt://", "needs a path"},
		{"mem:/x", "takes no path"},
		{"etcd://h1/p", `member "h1" is no HOST:PORT`},
	} {
		_, err := ParseMetaDB(c.in)
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "etcd://HOST:PORT") {
			t.Errorf("ParseMetaDB(%q) error = %v; want one saying %q and what is expected", c.in, err, c.says)
		}
	}
}

// TestMetaDBForDataDir: --data DIR finds the database `tessera up --data
// DIR` made (DIR/meta), and also when DIR is that database itself; before,
// `tessera meta --data DIR/meta` created an empty DIR/meta/meta.
func TestMetaDBForDataDir(t *testing.T) {
	dir := t.TempDir()
	nested := MetaDB{EnginePebble, filepath.Join(dir, "meta")}
	if got := MetaDBForDataDir(dir); got != nested {
		t.Fatalf("new data directory: %+v; want %+v", got, nested)
	}
	s, err := nested.Open()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if !nested.Exists() {
		t.Fatalf("%s does not exist after Open", nested)
	}
	if got := MetaDBForDataDir(dir); got != nested {
		t.Errorf("up's data directory: %+v; want %+v", got, nested)
	}
	if got := MetaDBForDataDir(nested.Path + "/"); got != nested {
		t.Errorf("the database itself as --data: %+v; want %+v (not a new database inside it)", got, nested)
	}
	if d := nested.DataDir(); d != dir {
		t.Errorf("DataDir of %s = %s; want %s (the lock of up's data directory)", nested, d, dir)
	}
}

func TestBoltAndMemOpen(t *testing.T) {
	for _, db := range []MetaDB{{EngineBolt, filepath.Join(t.TempDir(), "sub", "meta.db")}, {EngineMem, ""}} {
		s, err := db.Open()
		if err != nil {
			t.Fatalf("%s: %v", db, err)
		}
		s.Close()
	}
}
