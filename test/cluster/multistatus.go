package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClusterStatus is `tessera status --meta ADDR` parsed.
type ClusterStatus struct {
	UnderReplicated int64 // "under-replicated: N"
	Misplaced       int64 // "misplaced: N"
	BytesToMove     int64 // "bytes to move: N"
	MoverRounds     int64 // "mover rounds: N"
	Servers         int   // "servers: N (M up)"
	ServersUp       int
	Server          map[string]ServerStatus // "server ID: addr=… state=… blocks=N bytes=N", by ID
	// Lost is "lost: N" (0 when the line is absent), LostBlocks the
	// "lost block HASH: …" lines by hash.
	Lost       int64
	LostBlocks map[string]string
	// The servers' scrub, summed ("scrub rounds: N" is the least rounds
	// any server completed); all 0 when no server scrubs.
	ScrubRounds, ScrubbedBlocks, ScrubbedBytes, CorruptFound int64

	Raw  Status // every "key: value" line
	Text string // the output as printed, for failure messages
}

// ServerStatus is one server line of `tessera status`.
type ServerStatus struct {
	ID, Addr, State string // State: up, down or draining
	Blocks, Bytes   int64
	// ScrubRounds, ScrubBlocks and ScrubCorrupt are the server's scrub
	// (scrub_rounds=, scrub_blocks=, scrub_corrupt=; 0 when absent).
	ScrubRounds, ScrubBlocks, ScrubCorrupt int64
}

// ParseClusterStatus parses `tessera status` output. A missing or malformed
// field of the contract is an error that names it.
func ParseClusterStatus(out string) (ClusterStatus, error) {
	st := ClusterStatus{Raw: ParseStatus(out), Text: out, Server: map[string]ServerStatus{}, LostBlocks: map[string]string{}}
	var errs []error
	for key, dst := range map[string]*int64{
		"lost":                 &st.Lost,
		"scrub rounds":         &st.ScrubRounds,
		"scrubbed blocks":      &st.ScrubbedBlocks,
		"scrubbed bytes":       &st.ScrubbedBytes,
		"corrupt copies found": &st.CorruptFound,
	} {
		if _, ok := st.Raw[key]; ok {
			n, err := st.Raw.Int(key)
			errs = append(errs, err)
			*dst = n
		}
	}
	for key, dst := range map[string]*int64{
		"under-replicated": &st.UnderReplicated,
		"misplaced":        &st.Misplaced,
		"bytes to move":    &st.BytesToMove,
		"mover rounds":     &st.MoverRounds,
	} {
		n, err := st.Raw.Int(key)
		errs = append(errs, err)
		*dst = n
	}
	if _, err := fmt.Sscanf(st.Raw["servers"], "%d (%d up)", &st.Servers, &st.ServersUp); err != nil {
		errs = append(errs, fmt.Errorf("tessera status: servers: %q is not \"N (M up)\"", st.Raw["servers"]))
	}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "lost block "); ok {
			if h, what, ok := strings.Cut(rest, ":"); ok {
				st.LostBlocks[h] = strings.TrimSpace(what)
			}
			continue
		}
		rest, ok := strings.CutPrefix(line, "server ")
		if !ok {
			continue
		}
		id, kv, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		f := lineFields(kv)
		s := ServerStatus{ID: strings.TrimSpace(id), Addr: f["addr"], State: f["state"]}
		var err1, err2 error
		s.Blocks, err1 = strconv.ParseInt(f["blocks"], 10, 64)
		s.Bytes, err2 = strconv.ParseInt(f["bytes"], 10, 64)
		for key, dst := range map[string]*int64{"scrub_rounds": &s.ScrubRounds, "scrub_blocks": &s.ScrubBlocks, "scrub_corrupt": &s.ScrubCorrupt} {
			if v, ok := f[key]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					errs = append(errs, fmt.Errorf("tessera status: server line %q: %s=%q", line, key, v))
				}
				*dst = n
			}
		}
		if err1 != nil || err2 != nil || s.State == "" {
			errs = append(errs, fmt.Errorf("tessera status: server line %q lacks state=, blocks=N or bytes=N", line))
		}
		st.Server[s.ID] = s
	}
	if err := errors.Join(errs...); err != nil {
		return st, fmt.Errorf("%w\n--- tessera status ---\n%s", err, out)
	}
	return st, nil
}

// Status runs `tessera status --meta ADDR` and parses it.
func (m *Multi) Status(ctx context.Context) (ClusterStatus, error) {
	res, err := m.Run(ctx, "status")
	if err != nil {
		return ClusterStatus{}, err
	}
	if res.ExitCode != 0 {
		return ClusterStatus{}, fmt.Errorf("tessera status: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	return ParseClusterStatus(res.Stdout)
}

// StatusPoll is how often WaitFor polls `tessera status`.
const StatusPoll = 250 * time.Millisecond

// WaitFor polls `tessera status` until cond holds for a status, and returns
// that status. cond sees every status that parsed, so it can also check an
// invariant at each poll. A status that fails to run or parse is retried (a
// cluster under repair may answer slowly) until the deadline; the error
// then carries the last status and the last error. Each `tessera status`
// is bounded by what is left of timeout (at least 5 s).
func (m *Multi) WaitFor(timeout time.Duration, what string, cond func(ClusterStatus) bool) (ClusterStatus, error) {
	deadline := time.Now().Add(timeout)
	var last ClusterStatus
	var lastErr error
	polls := 0
	for {
		ctx, cancel := context.WithDeadline(context.Background(), maxTime(deadline, time.Now().Add(5*time.Second)))
		st, err := m.Status(ctx)
		cancel()
		polls++
		if err == nil {
			last, lastErr = st, nil
			if cond(st) {
				return st, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("cluster: %s: not within %v (%d status polls); last status:\n%s", what, timeout, polls, last.Text)
			if lastErr != nil {
				err = fmt.Errorf("%w\nlast error: %v", err, lastErr)
			}
			return last, err
		}
		time.Sleep(StatusPoll)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
