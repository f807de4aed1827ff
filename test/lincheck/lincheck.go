// Package lincheck is the porcupine model of the project's linearizability
// checks: one register per file, written with whole records and read back
// whole. The e2e consistency tests and the chaos run (test/chaos) record
// their histories as porcupine.Operations whose Input is an Input and whose
// Output is the uint64 a read returned (Torn for a short or torn record).
package lincheck

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Torn is the output of a read that returned a short or torn record.
const Torn = ^uint64(0)

// Input is one operation on a register: a read, or a write of Value.
type Input struct {
	File  int
	Write bool
	Value uint64
}

// Model returns the register-per-file model (porcupine partitions by file);
// a read returns the last value written, initial before any write.
func Model(initial uint64) porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[int][]porcupine.Operation{}
			for _, op := range h {
				f := op.Input.(Input).File
				by[f] = append(by[f], op)
			}
			keys := make([]int, 0, len(by))
			for f := range by {
				keys = append(keys, f)
			}
			sort.Ints(keys)
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, f := range keys {
				out = append(out, by[f])
			}
			return out
		},
		Init: func() any { return initial },
		Step: func(state, input, output any) (bool, any) {
			in := input.(Input)
			if in.Write {
				return true, in.Value
			}
			return output.(uint64) == state.(uint64), state
		},
		DescribeOperation: func(input, output any) string {
			in := input.(Input)
			if in.Write {
				return fmt.Sprintf("f%d: write %#x", in.File, in.Value)
			}
			if output.(uint64) == Torn {
				return fmt.Sprintf("f%d: read torn/short", in.File)
			}
			return fmt.Sprintf("f%d: read %#x", in.File, output.(uint64))
		},
		DescribeState: func(state any) string { return fmt.Sprintf("%#x", state.(uint64)) },
	}
}

// StaleReads lists, for failure messages, the reads that returned a value
// overwritten before the read began: a write of another value to the same
// file started after the read value's write returned and returned before the
// read was called. Any one is a violation; the list is not all of them.
func StaleReads(hist []porcupine.Operation) []string {
	writes := map[uint64]porcupine.Operation{}
	for _, op := range hist {
		if in := op.Input.(Input); in.Write {
			writes[in.Value] = op
		}
	}
	var out []string
	for _, r := range hist {
		in := r.Input.(Input)
		v := r.Output.(uint64)
		if in.Write || v == Torn {
			continue
		}
		var vRet int64 = -1 // the initial value "returned" before everything
		if w, ok := writes[v]; ok {
			vRet = w.Return
		}
		for _, w := range hist {
			win := w.Input.(Input)
			if win.Write && win.File == in.File && win.Value != v && w.Call > vRet && w.Return < r.Call {
				out = append(out, fmt.Sprintf("client %d read %#x from f%d at %v, but client %d's write of %#x to it had returned at %v",
					r.ClientId, v, in.File, time.Duration(r.Call), w.ClientId, win.Value, time.Duration(w.Return)))
				break
			}
		}
	}
	return out
}
