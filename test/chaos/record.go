package chaos

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxViolations bounds the violations kept word for word; the rest are
// counted.
const maxViolations = 20

// recorder counts operations, faults and errors, and knows whether a fault
// is on (or healed less than grace ago): an error then is counted under
// "fault", otherwise under "calm", where it breaks an invariant.
type recorder struct {
	grace time.Duration
	now   func() time.Time

	mu         sync.Mutex
	ops        map[string]int // by kind: write, read, rename, lin
	faults     map[string]int // by kind
	errs       map[string]int // "OP ERRNO (calm|fault)"
	violations map[string][]string
	nviol      map[string]int
	faultOn    bool
	healed     time.Time
}

func newRecorder(grace time.Duration) *recorder {
	return &recorder{grace: grace, now: time.Now, ops: map[string]int{}, faults: map[string]int{},
		errs: map[string]int{}, violations: map[string][]string{}, nviol: map[string]int{}}
}

func (r *recorder) op(kind string) {
	r.mu.Lock()
	r.ops[kind]++
	r.mu.Unlock()
}

// faultStart and faultEnd bracket one injected fault.
func (r *recorder) faultStart(kind string) {
	r.mu.Lock()
	r.faults[kind]++
	r.faultOn = true
	r.mu.Unlock()
}

func (r *recorder) faultEnd() {
	r.mu.Lock()
	r.faultOn = false
	r.healed = r.now()
	r.mu.Unlock()
}

// calm reports whether no fault is on and the last healed grace ago.
func (r *recorder) calm() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calmLocked()
}

func (r *recorder) calmLocked() bool {
	return !r.faultOn && r.now().Sub(r.healed) >= r.grace
}

// fail counts a failed operation by kind and errno. since is when the
// operation started: it is calm only if the whole operation was. A
// failure in calm is a violation of invariant inv (with detail).
func (r *recorder) fail(op string, err error, since time.Time, inv, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	calm := r.calmLocked() && since.Sub(r.healed) >= r.grace
	phase := "fault"
	if calm {
		phase = "calm"
	}
	r.errs[fmt.Sprintf("%s %s (%s)", op, errName(err), phase)]++
	if calm && inv != "" {
		r.violateLocked(inv, fmt.Sprintf("%s: %v", detail, err))
	}
}

// violate records a broken invariant.
func (r *recorder) violate(inv, detail string) {
	r.mu.Lock()
	r.violateLocked(inv, detail)
	r.mu.Unlock()
}

func (r *recorder) violateLocked(inv, detail string) {
	r.nviol[inv]++
	if len(r.violations[inv]) < maxViolations {
		r.violations[inv] = append(r.violations[inv], detail)
	}
}

// errName names an error by its errno (EIO, ENOENT…), "error" otherwise.
func errName(err error) string {
	var no syscall.Errno
	if errors.As(err, &no) {
		if n := unix.ErrnoName(no); n != "" {
			return n
		}
		return fmt.Sprintf("errno%d", int(no))
	}
	return "error"
}

// counts formats a map as "k1 n1, k2 n2" in key order ("none" if empty).
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
