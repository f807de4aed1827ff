package lincheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Record is one operation of a kept history, one JSON line each (the chaos
// run's linearizability/history.jsonl): times in ns from the history's
// start, a write that may or may not have happened returns at
// math.MaxInt64.
type Record struct {
	Client        int
	File          int
	Write         bool
	Value, Output uint64
	Call, Return  int64
}

// WriteHistory writes hist as Records, one JSON line each.
func WriteHistory(w io.Writer, hist []porcupine.Operation) error {
	enc := json.NewEncoder(w)
	for _, op := range hist {
		in := op.Input.(Input)
		r := Record{op.ClientId, in.File, in.Write, in.Value, op.Output.(uint64), op.Call, op.Return}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// ReadHistory reads what WriteHistory wrote.
func ReadHistory(rd io.Reader) ([]porcupine.Operation, error) {
	var hist []porcupine.Operation
	sc := bufio.NewScanner(rd)
	for line := 1; sc.Scan(); line++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("history line %d: %w", line, err)
		}
		hist = append(hist, porcupine.Operation{ClientId: r.Client,
			Input: Input{File: r.File, Write: r.Write, Value: r.Value}, Output: r.Output, Call: r.Call, Return: r.Return})
	}
	return hist, sc.Err()
}

// Prefix is the history as it stood at time t: the operations called
// before t; one that had not returned by t is a write still pending
// (returns at the end of time) or a read that observed nothing yet (left
// out). Every prefix of a linearizable history is linearizable.
func Prefix(hist []porcupine.Operation, t int64) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range hist {
		if op.Call >= t {
			continue
		}
		if op.Return >= t {
			if !op.Input.(Input).Write {
				continue
			}
			op.Return = math.MaxInt64
		}
		out = append(out, op)
	}
	return out
}

// Failure is where a refused history first goes wrong.
type Failure struct {
	File int
	// At is the earliest time whose Prefix porcupine refuses: the
	// operation returning at At (Last) is the first observation no
	// linearization of what came before explains.
	At   int64
	Last porcupine.Operation
	// Window is the file's operations overlapping the Span before At, in
	// call order.
	Window []porcupine.Operation
}

// FirstFailure finds, in a history the model refuses, the file and the
// earliest return time at which it goes wrong (a binary search over the
// file's return times, each step a porcupine check bounded by timeout),
// and the file's operations within span before it. ok is false when
// porcupine accepts the history, or one of the checks is undecided within
// timeout.
func FirstFailure(model porcupine.Model, hist []porcupine.Operation, span time.Duration, timeout time.Duration) (Failure, bool) {
	for _, ops := range model.Partition(hist) {
		if porcupine.CheckOperationsTimeout(model, ops, timeout) != porcupine.Illegal {
			continue
		}
		ends := make([]int64, 0, len(ops))
		for _, op := range ops {
			if op.Return != math.MaxInt64 {
				ends = append(ends, op.Return)
			}
		}
		slices.Sort(ends)
		// The smallest i with Prefix(ends[i]+1) refused.
		lo, hi := 0, len(ends)-1
		for lo < hi {
			mid := (lo + hi) / 2
			switch porcupine.CheckOperationsTimeout(model, Prefix(ops, ends[mid]+1), timeout) {
			case porcupine.Illegal:
				hi = mid
			case porcupine.Ok:
				lo = mid + 1
			default:
				return Failure{}, false // undecided: no telling where
			}
		}
		at := ends[lo]
		f := Failure{File: ops[0].Input.(Input).File, At: at}
		for _, op := range ops {
			if op.Return == at {
				f.Last = op
			}
			if op.Call <= at && op.Return >= at-int64(span) {
				f.Window = append(f.Window, op)
			}
		}
		slices.SortFunc(f.Window, func(a, b porcupine.Operation) int { return int(min(max(a.Call-b.Call, -1), 1)) })
		return f, true
	}
	return Failure{}, false
}

// Describe is one line for op, times from the history's start.
func Describe(op porcupine.Operation) string {
	in := op.Input.(Input)
	ret := "pending"
	if op.Return != math.MaxInt64 {
		ret = time.Duration(op.Return).String()
	}
	what := fmt.Sprintf("read  %#x", op.Output.(uint64))
	if in.Write {
		what = fmt.Sprintf("write %#x", in.Value)
	} else if op.Output.(uint64) == Torn {
		what = "read  torn/short"
	}
	return fmt.Sprintf("client %d f%d %-24s %v .. %s", op.ClientId, in.File, what, time.Duration(op.Call), ret)
}
