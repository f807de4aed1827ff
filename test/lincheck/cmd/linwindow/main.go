// Command linwindow studies a register history porcupine refused (the
// chaos run's DIR/linearizability/history.jsonl):
//
//	linwindow [--span 5s] [--initial 1] [--timeout 1m] HISTORY
//
// It prints the file whose history fails, the earliest time at which it
// goes wrong (the shortest refused prefix: the operation returning then is
// the first observation nothing before it explains), and that file's
// operations within span before it. When the directory holds start.txt
// (the history's start on the wall clock, which the chaos run writes),
// times are also given on the wall clock, to set beside the run's fault log.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tessera/test/lincheck"
)

func main() {
	span := flag.Duration("span", 5*time.Second, "how far before the failure operations are listed")
	initial := flag.Uint64("initial", 1, "the registers' initial value")
	timeout := flag.Duration("timeout", time.Minute, "bound of each porcupine check")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: linwindow [--span D] [--initial V] [--timeout D] HISTORY")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *span, *initial, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "linwindow:", err)
		os.Exit(1)
	}
}

func run(path string, span time.Duration, initial uint64, timeout time.Duration) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	hist, err := lincheck.ReadHistory(f)
	if err != nil {
		return err
	}
	var start time.Time
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "start.txt")); err == nil {
		start, _ = time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
	}
	wall := func(ns int64) string {
		if start.IsZero() || ns == math.MaxInt64 {
			return ""
		}
		return " [" + start.Add(time.Duration(ns)).Format("15:04:05.000") + "]"
	}
	fail, ok := lincheck.FirstFailure(lincheck.Model(initial), hist, span, timeout)
	if !ok {
		fmt.Printf("%d operations: linearizable (or undecided within %v)\n", len(hist), timeout)
		return nil
	}
	fmt.Printf("%d operations; f%d first goes wrong at %v%s with:\n  %s%s\n", len(hist), fail.File,
		time.Duration(fail.At), wall(fail.At), lincheck.Describe(fail.Last), wall(fail.Last.Call))
	fmt.Printf("f%d's operations within %v before:\n", fail.File, span)
	for _, op := range fail.Window {
		fmt.Printf("  %s%s\n", lincheck.Describe(op), wall(op.Call))
	}
	return nil
}
