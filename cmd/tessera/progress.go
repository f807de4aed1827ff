package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"tessera/internal/admin"
)

// How the long admin commands (gc, fsck, server drain --wait) show their
// progress (admin.Progress): a bar with rate and ETA on stderr when it is
// a terminal; else a plain line on stderr when a phase begins, when it
// ends and at most every linesEvery between; with --json, one JSON object
// a line on stdout for each of those moments and a final result object,
// and nothing else on stdout.
const linesEvery = 2 * time.Second

// progressMode is how a progressOut renders.
type progressMode int

const (
	modeLines progressMode = iota // plain lines (not a terminal)
	modeBar                       // a progress bar (a terminal)
	modeJSON                      // JSON lines on stdout (--json)
)

// progressOut renders the progress reports of one command. Its methods
// are called from the command's goroutine only.
type progressOut struct {
	mode  progressMode
	w     io.Writer // lines and the bar
	enc   *json.Encoder
	now   func() time.Time
	every time.Duration

	cur       admin.Progress
	started   time.Time // of the current phase
	shown     time.Time // when the current phase was last shown
	shownLast bool      // the latest report of the phase was shown
	active    bool      // a phase has begun
	bar       *progressbar.ProgressBar
	barBytes  bool // the bar counts bytes, not units
}

// newProgressOut renders to stderr (bar or lines) or, with jsonOut, to
// stdout.
func newProgressOut(jsonOut bool) *progressOut {
	p := &progressOut{w: os.Stderr, enc: json.NewEncoder(os.Stdout), now: time.Now, every: linesEvery}
	switch {
	case jsonOut:
		p.mode = modeJSON
	case term.IsTerminal(int(os.Stderr.Fd())):
		p.mode = modeBar
	}
	return p
}

// report is the admin.ProgressFunc.
func (p *progressOut) report(r admin.Progress) {
	now := p.now()
	if !p.active || r.Op != p.cur.Op || r.Phase != p.cur.Phase {
		p.endPhase()
		p.cur, p.started, p.active = r, now, true
		p.show(now)
		return
	}
	p.cur, p.shownLast = r, false
	switch p.mode {
	case modeBar:
		p.setBar()
	default:
		if now.Sub(p.shown) >= p.every {
			p.show(now)
		}
	}
}

// finish shows the end of the last phase; call it before the result.
func (p *progressOut) finish() {
	p.endPhase()
	p.active = false
}

// endPhase shows the latest report of the current phase if it was not.
func (p *progressOut) endPhase() {
	if !p.active {
		return
	}
	if p.mode == modeBar {
		p.setBar()
		if p.bar != nil {
			p.bar.Finish()
			p.bar = nil
			fmt.Fprintln(p.w)
		}
		return
	}
	if !p.shownLast {
		p.show(p.now())
	}
}

// show renders the current report (bar: starts the phase's bar).
func (p *progressOut) show(now time.Time) {
	p.shown, p.shownLast = now, true
	switch p.mode {
	case modeJSON:
		p.enc.Encode(p.event(now))
	case modeLines:
		fmt.Fprintln(p.w, p.line(now))
	case modeBar:
		p.newBar()
		p.setBar()
	}
}

// unit names what a phase counts.
func unit(phase string) string {
	switch phase {
	case "walk":
		return "recipe entries"
	case "evict", "list", "fetch":
		return "files"
	}
	return "blocks"
}

// rates returns units and bytes per second since the phase began, and
// the time left at that rate (-1: not known).
func (p *progressOut) rates(now time.Time) (rate, byteRate float64, eta time.Duration) {
	el := now.Sub(p.started).Seconds()
	eta = -1
	if el <= 0 {
		return 0, 0, eta
	}
	rate, byteRate = float64(p.cur.Done)/el, float64(p.cur.Bytes)/el
	if rate > 0 && p.cur.Total >= p.cur.Done {
		eta = time.Duration(float64(p.cur.Total-p.cur.Done) / rate * float64(time.Second))
	}
	return rate, byteRate, eta
}

// line is the plain-text form of the current report, e.g.
// "fsck check: 10/12 blocks (83%), 1.0 MiB/1.2 MiB, 20.0 blocks/s, 2.0 MiB/s, ETA 1s".
func (p *progressOut) line(now time.Time) string {
	c := p.cur
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: ", c.Op, c.Phase)
	if c.Total > 0 {
		fmt.Fprintf(&b, "%d/%d %s (%d%%)", c.Done, c.Total, unit(c.Phase), c.Done*100/c.Total)
	} else {
		fmt.Fprintf(&b, "%d %s", c.Done, unit(c.Phase))
	}
	if c.TotalBytes > 0 {
		fmt.Fprintf(&b, ", %s/%s", humanBytes(float64(c.Bytes)), humanBytes(float64(c.TotalBytes)))
	}
	rate, byteRate, eta := p.rates(now)
	if now.After(p.started) {
		fmt.Fprintf(&b, ", %.1f %s/s", rate, unit(c.Phase))
		if c.Bytes > 0 {
			fmt.Fprintf(&b, ", %s/s", humanBytes(byteRate))
		}
	}
	if eta >= 0 && c.Total > 0 {
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	}
	return b.String()
}

// progressEvent is the JSON form of a report.
type progressEvent struct {
	Event      string   `json:"event"` // "progress"
	Op         string   `json:"op"`
	Phase      string   `json:"phase"`
	Unit       string   `json:"unit"`
	Done       int64    `json:"done"`
	Total      int64    `json:"total"` // 0: not known
	Bytes      int64    `json:"bytes"`
	TotalBytes int64    `json:"total_bytes"`
	Elapsed    float64  `json:"elapsed_seconds"`
	Rate       float64  `json:"rate"`       // units per second
	ByteRate   float64  `json:"bytes_rate"` // bytes per second
	ETA        *float64 `json:"eta_seconds,omitempty"`
}

func (p *progressOut) event(now time.Time) progressEvent {
	c := p.cur
	rate, byteRate, eta := p.rates(now)
	e := progressEvent{Event: "progress", Op: c.Op, Phase: c.Phase, Unit: unit(c.Phase), Done: c.Done, Total: c.Total,
		Bytes: c.Bytes, TotalBytes: c.TotalBytes, Elapsed: now.Sub(p.started).Seconds(), Rate: rate, ByteRate: byteRate}
	if eta >= 0 && c.Total > 0 {
		s := eta.Seconds()
		e.ETA = &s
	}
	return e
}

// newBar starts the bar of the current phase: over bytes when the phase
// knows them, else over its units; a spinner while the total is unknown.
func (p *progressOut) newBar() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
	c := p.cur
	p.barBytes = c.TotalBytes > 0
	limit := c.Total
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(c.Op + " " + c.Phase),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond),
	}
	if p.barBytes {
		limit = c.TotalBytes
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true))
	} else {
		opts = append(opts, progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit(c.Phase)))
	}
	if limit <= 0 {
		limit = -1 // a spinner
	}
	p.bar = progressbar.NewOptions64(limit, opts...)
}

// setBar moves the bar to the current report.
func (p *progressOut) setBar() {
	if p.bar == nil {
		return
	}
	c := p.cur
	done, limit := c.Done, c.Total
	if p.barBytes {
		done, limit = c.Bytes, c.TotalBytes
	}
	if limit > 0 && limit != p.bar.GetMax64() {
		p.bar.ChangeMax64(limit)
	}
	p.bar.Set64(done)
}

// result writes the command's outcome: with --json the object v with
// "event":"result", "op" and, on failure, "error" added; else nothing
// (the command prints its own summary).
func (p *progressOut) result(op string, v map[string]any, err error) {
	if p.mode != modeJSON {
		return
	}
	out := map[string]any{"event": "result", "op": op, "ok": err == nil}
	for k, x := range v {
		out[k] = x
	}
	if err != nil {
		out["error"] = err.Error()
	}
	p.enc.Encode(out)
}

// jsonLines is an io.Writer that turns each line written to it into a
// JSON object {"event": event, "text": line} on enc (fsck's findings
// under --json).
type jsonLines struct {
	enc   *json.Encoder
	event string
	buf   []byte
}

func (j *jsonLines) Write(b []byte) (int, error) {
	j.buf = append(j.buf, b...)
	for {
		i := strings.IndexByte(string(j.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		if err := j.enc.Encode(map[string]string{"event": j.event, "text": string(j.buf[:i])}); err != nil {
			return 0, err
		}
		j.buf = j.buf[i+1:]
	}
}

// humanBytes writes n bytes with a binary unit: "1.5 MiB".
func humanBytes(n float64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%.0f B", n)
	}
	i := -1
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", n, units[i])
}

// barSafe writes to w after clearing the bar's line, so that lines a
// command prints while the bar runs (fsck's findings) are not drawn over.
type barSafe struct {
	out *progressOut
	w   io.Writer
}

func (b *barSafe) Write(p []byte) (int, error) {
	if b.out.bar != nil {
		b.out.bar.Clear()
	}
	return b.w.Write(p)
}
