package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tessera/test/cluster"
)

// TestSQLiteCommitsSurviveRestart: two processes commit small SQLite
// transactions at once (bench/sqlitetx.py: synchronous=FULL, each commit
// an fsync), in WAL mode and with the rollback journal, under the session
// and posix policies. Every commit of the WAL and of the database pages
// is a composed block named from the version before's hash tree
// (internal/client/trees.go); after a restart a fresh client reads the
// database through those compositions (each assembly checks the name
// against the content): integrity_check is ok, every row is there, and
// fsck is clean.
func TestSQLiteCommitsSurviveRestart(t *testing.T) {
	if err := exec.Command("python3", "-c", "import sqlite3").Run(); err != nil {
		t.Skipf("python3 with sqlite3 is not here: %v", err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "bench", "sqlitetx.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []string{"session", "posix"} {
		t.Run(policy, func(t *testing.T) {
			c := startCluster(t, func(o *cluster.Options) { o.Args = append(o.Args, "--policy", policy) })
			for _, mode := range []string{"wal", "delete"} {
				db := filepath.Join(c.Mount(), mode+".db")
				out, err := exec.Command("python3", script, "--db", db, "--mode", mode,
					"--procs", "2", "--tx", "150").CombinedOutput()
				if err != nil {
					t.Fatalf("%s: sqlitetx: %v\n%s", mode, err, out)
				}
				t.Logf("%s: %s", mode, strings.TrimSpace(string(out)))
			}
			restart(t, c)
			for _, mode := range []string{"wal", "delete"} {
				db := filepath.Join(c.Mount(), mode+".db")
				out, err := exec.Command("python3", "-c", `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
print(",".join(r[0] for r in con.execute("PRAGMA integrity_check")), con.execute("SELECT count(*) FROM t").fetchone()[0])`, db).CombinedOutput()
				if got, want := strings.TrimSpace(string(out)), "ok 300"; err != nil || got != want {
					t.Fatalf("%s after a restart: %q, %v; want %q", mode, got, err, want)
				}
			}
			fsckClean(t, c)
		})
	}
}
