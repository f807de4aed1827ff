package up

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tessera/internal/kv"
	"tessera/internal/kv/boltkv"
	"tessera/internal/kv/etcdkv"
	"tessera/internal/kv/memkv"
	"tessera/internal/kv/pebblekv"
)

// MetaDB names the meta service's KV engine and where it keeps its data, as
// the --meta-db flag of every role that runs a meta service gives it:
//
//	pebble:DIR     Pebble (the default) in directory DIR
//	bolt:FILE      bbolt in the single file FILE
//	mem:           in memory: everything is lost when the process ends (tests)
//	etcd://HOST:PORT[,HOST:PORT...]/PREFIX[?ca=FILE&cert=FILE&key=FILE&majority-wait=D]
//	               a shared etcd cluster, keys under PREFIX (package etcdkv;
//	               TLS to etcd when ca is given)
//
// "ENGINE://PATH" is accepted as well, so pebble:///var/tmp/t/meta and
// pebble:/var/tmp/t/meta are the same.
type MetaDB struct {
	Engine string // "pebble", "bolt", "mem" or "etcd"
	Path   string // "" for mem; for etcd what follows etcd://
}

// Engines of MetaDB.
const (
	EnginePebble = "pebble"
	EngineBolt   = "bolt"
	EngineMem    = "mem"
	EngineEtcd   = "etcd"
)

// String returns db in the form ParseMetaDB reads.
func (db MetaDB) String() string {
	if db.Engine == EngineEtcd {
		return "etcd://" + db.Path
	}
	return db.Engine + ":" + db.Path
}

// etcdConnectTimeout bounds how long Open waits for a majority of an etcd
// cluster to answer.
const etcdConnectTimeout = 30 * time.Second

// ParseMetaDB parses a --meta-db value; the error says what was wrong and
// what is expected.
func ParseMetaDB(s string) (MetaDB, error) {
	const want = "want pebble:DIR, bolt:FILE, mem: or etcd://HOST:PORT[,HOST:PORT...]/PREFIX"
	engine, path, ok := strings.Cut(s, ":")
	if !ok {
		return MetaDB{}, fmt.Errorf("--meta-db %q: no engine (%s)", s, want)
	}
	if rest, ok := strings.CutPrefix(path, "//"); ok {
		path = rest
	}
	db := MetaDB{Engine: engine, Path: path}
	switch engine {
	case EnginePebble, EngineBolt:
		if path == "" {
			return MetaDB{}, fmt.Errorf("--meta-db %q: %s needs a path (%s)", s, engine, want)
		}
		db.Path = filepath.Clean(path)
	case EngineMem:
		if path != "" {
			return MetaDB{}, fmt.Errorf("--meta-db %q: mem takes no path (%s)", s, want)
		}
	case EngineEtcd:
		if _, err := etcdkv.ParseURL("etcd://" + db.Path); err != nil {
			return MetaDB{}, fmt.Errorf("--meta-db: %w", err)
		}
	default:
		return MetaDB{}, fmt.Errorf("--meta-db %q: unknown engine %q (%s)", s, engine, want)
	}
	return db, nil
}

// DataDir is the directory whose lock guards db: the parent of its path
// ("" for mem and etcd, which no local lock guards).
func (db MetaDB) DataDir() string {
	if db.Path == "" || db.Engine == EngineEtcd {
		return ""
	}
	return filepath.Dir(db.Path)
}

// Open opens the engine, creating its files when there are none.
func (db MetaDB) Open() (kv.Store, error) {
	switch db.Engine {
	case EnginePebble:
		s, err := pebblekv.Open(db.Path, MetaStoreOptions())
		if err != nil {
			return nil, fmt.Errorf("meta database %s: %w", db, err)
		}
		return s, nil
	case EngineBolt:
		if err := os.MkdirAll(filepath.Dir(db.Path), 0o755); err != nil {
			return nil, fmt.Errorf("meta database %s: %w", db, err)
		}
		s, err := boltkv.Open(db.Path, boltkv.Options{})
		if err != nil {
			return nil, fmt.Errorf("meta database %s: %w", db, err)
		}
		return s, nil
	case EngineMem:
		return memkv.New(), nil
	case EngineEtcd:
		target, err := etcdkv.ParseURL(db.String())
		if err != nil {
			return nil, fmt.Errorf("meta database: %w", err)
		}
		opts, err := target.Options()
		if err != nil {
			return nil, fmt.Errorf("meta database %s: %w", db, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), etcdConnectTimeout)
		defer cancel()
		s, err := etcdkv.Open(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("meta database %s: %w", db, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("meta database %s: unknown engine", db)
}

// Exists reports whether db holds a database already (mem never does;
// etcd is not asked and reports false).
func (db MetaDB) Exists() bool {
	switch db.Engine {
	case EnginePebble:
		return isPebbleDir(db.Path)
	case EngineBolt:
		fi, err := os.Stat(db.Path)
		return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
	}
	return false
}

// isPebbleDir reports whether dir holds a Pebble database (its CURRENT
// file names the live manifest).
func isPebbleDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "CURRENT"))
	return err == nil
}

// MetaDBForDataDir is the database of a data directory given with --data:
// DIR/meta (Pebble), where `tessera up` and `tessera meta` both keep it. So
// that `--data` pointed at the database itself (DIR/meta, as the README
// shows it) finds it instead of creating an empty one inside it, a DIR that
// is a Pebble database and has none in DIR/meta is taken as the database.
func MetaDBForDataDir(dir string) MetaDB {
	dir = filepath.Clean(dir)
	nested := MetaDB{Engine: EnginePebble, Path: filepath.Join(dir, "meta")}
	if !nested.Exists() && isPebbleDir(dir) {
		return MetaDB{Engine: EnginePebble, Path: dir}
	}
	return nested
}

// checkDataDir creates dir if needed and checks that it is a directory.
func checkDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s: not a directory", dir)
	}
	return nil
}
