#!/usr/bin/env python3
"""bench/sqlitetx.py - the SQLite job of bench/run.sh (issue 28).

    python3 bench/sqlitetx.py --db FILE --mode wal|delete [--procs 2] [--tx 10000]

Creates FILE (it must not exist) in the given journal mode (wal: write-ahead
log; delete: the rollback journal, SQLite's default), then runs --procs
processes at once, each committing --tx small transactions (BEGIN IMMEDIATE;
one INSERT of a 100-byte row; COMMIT) with SQLite's default synchronous=FULL,
so every commit is durable. Afterwards: PRAGMA integrity_check and a count of
the rows (procs x tx). Prints one line

    step=sqlite mode=M procs=P tx=N secs=S tx_per_s=R integrity=ok rows=K

(secs: the transactions only, from the first worker's start to the last one's
end) and exits 0; exits 1 with a message naming what failed.
"""
import argparse
import multiprocessing
import os
import sqlite3
import sys
import time

BUSY_TIMEOUT_S = 120  # a writer waits this long for the other one's lock


def worker(db, proc, n, start, q):
    try:
        con = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        start.wait()
        for i in range(n):
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO t(proc, seq, payload) VALUES (?, ?, randomblob(100))", (proc, i))
            con.execute("COMMIT")
        con.close()
        q.put((proc, None))
    except Exception as e:  # reported by the parent, named
        q.put((proc, f"{type(e).__name__}: {e}"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--mode", required=True, choices=["wal", "delete"])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--tx", type=int, default=10000)
    a = ap.parse_args()
    if not 1 <= a.procs <= 64:
        sys.exit("sqlitetx: --procs must be 1..64")
    if not 1 <= a.tx <= 10_000_000:
        sys.exit("sqlitetx: --tx must be 1..10000000")
    if os.path.exists(a.db):
        sys.exit(f"sqlitetx: --db {a.db} exists already")

    con = sqlite3.connect(a.db, isolation_level=None)
    got = con.execute(f"PRAGMA journal_mode={a.mode}").fetchone()[0]
    if got.lower() != a.mode:
        sys.exit(f"sqlitetx: journal_mode {a.mode} refused (got {got})")
    con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, proc INTEGER, seq INTEGER, payload BLOB)")
    con.close()

    ctx = multiprocessing.get_context("fork")
    start, q = ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=worker, args=(a.db, p, a.tx, start, q)) for p in range(a.procs)]
    for p in ps:
        p.start()
    time.sleep(0.2)  # let every worker open the database before the clock starts
    t0 = time.monotonic()
    start.set()
    errs = []
    for _ in ps:
        proc, err = q.get()
        if err:
            errs.append(f"process {proc}: {err}")
    secs = time.monotonic() - t0
    for p in ps:
        p.join()
    if errs:
        sys.exit("sqlitetx: " + "; ".join(errs))

    con = sqlite3.connect(a.db, isolation_level=None)
    integ = con.execute("PRAGMA integrity_check").fetchall()
    rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
    con.close()
    integ_s = ",".join(str(r[0]) for r in integ)[:200]
    total = a.procs * a.tx
    print(f"step=sqlite mode={a.mode} procs={a.procs} tx={a.tx} secs={secs:.3f} "
          f"tx_per_s={total / secs:.1f} integrity={integ_s.replace(' ', '_')} rows={rows}")
    if integ_s != "ok":
        sys.exit(f"sqlitetx: integrity_check: {integ_s}")
    if rows != total:
        sys.exit(f"sqlitetx: {rows} rows, want {total}")


if __name__ == "__main__":
    main()
