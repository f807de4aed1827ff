package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ready-line prefixes of the roles a Multi runs.
const (
	MetaReadyPrefix   = "tessera meta: ready"
	BlockdReadyPrefix = "tessera blockd: ready"
	MountReadyPrefix  = "tessera mount: ready"
)

// logTime stamps the harness's own lines in the cluster output.
const logTime = "15:04:05.000"

// Daemon is one long-running child of a Multi (the meta service, a block
// server or a mount) or, inside a Cluster, `tessera up`. It runs in its own
// process group with a parent-death signal; Stop, Kill9 and Restart are safe
// in any order and more than once.
type Daemon struct {
	name     string   // "meta", "blockd b3", "mount m1", "tessera up": in its logs and errors
	bin      string   // the tessera binary
	args     []string // a mount's end with its mount point
	prefix   string   // of the ready line
	want     func(fields map[string]string) error
	mountDir string // mounts and up only: unmounted by Stop
	dataDir  string // meta, blockd and up only
	id       string // blockd only
	env      []string
	log      *logBuf
	// plain is the style of a Cluster's log: the child's output unprefixed,
	// harness lines untimed and none on SIGTERM, a start error with the tail.
	plain bool

	readyTimeout, stopTimeout time.Duration

	mu struct {
		sync.Mutex
		p      *proc
		fields map[string]string // of the latest ready line
		runs   int
	}
}

// proc is one child process.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when Wait returned
	waitErr error         // valid after done
	stopped bool          // we signalled it (guarded by Daemon.mu)
}

// Name returns the daemon's name in the logs ("meta", "blockd b3", "mount m1").
func (d *Daemon) Name() string { return d.name }

// ID returns a block server's --id ("" for other roles).
func (d *Daemon) ID() string { return d.id }

// DataDir returns --data of meta or blockd ("" for mounts).
func (d *Daemon) DataDir() string { return d.dataDir }

// Mount returns a mount's mount point ("" for other roles).
func (d *Daemon) Mount() string { return d.mountDir }

// Addr returns the listen= address of the latest ready line (meta, blockd).
func (d *Daemon) Addr() string { return d.Field("listen") }

// Field returns key=value of the latest ready line.
func (d *Daemon) Field(key string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.fields[key]
}

// PID returns the process id of the current (or last) run, 0 if none.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.p == nil {
		return 0
	}
	return d.mu.p.cmd.Process.Pid
}

// Running reports whether the current child is alive.
func (d *Daemon) Running() bool {
	d.mu.Lock()
	p := d.mu.p
	d.mu.Unlock()
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitError returns why the current child ended (nil while it runs or after
// a clean exit).
func (d *Daemon) ExitError() error {
	d.mu.Lock()
	p := d.mu.p
	d.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return p.waitErr
	default:
		return nil
	}
}

// start launches the child and waits for its ready line. On error nothing
// is left running or mounted. A restart of meta or blockd listens on the
// address of the previous run, so that the others find it again.
func (d *Daemon) start() error {
	if d.Running() {
		return fmt.Errorf("%s: already running", d.name)
	}
	args := slices.Clone(d.args)
	if prev := d.Addr(); prev != "" {
		if i := slices.Index(args, "--listen"); i >= 0 && i+1 < len(args) {
			args[i+1] = prev
		}
	}
	// A stale mount is the daemon's to clean up.
	if d.mountDir != "" && !IsMounted(d.mountDir) {
		if err := os.MkdirAll(d.mountDir, 0o755); err != nil {
			return err
		}
	}
	if d.dataDir != "" {
		if err := os.MkdirAll(d.dataDir, 0o755); err != nil {
			return err
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(d.bin, args...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout = outW
	cmd.Stderr = d.output()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// A test binary that dies (panic, timeout) takes the daemon along,
		// and SIGTERM lets a mount unmount on its way out.
		Pdeathsig: syscall.SIGTERM,
	}
	d.mu.Lock()
	d.mu.runs++
	run := d.mu.runs
	d.mu.Unlock()
	d.note(fmt.Sprintf("run %d", run), d.bin+" "+strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("start %s: %w", d.name, err)
	}
	outW.Close()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	ready := make(chan string, 1)
	go scanReady(outR, d.output(), d.prefix, ready)
	d.mu.Lock()
	d.mu.p = p
	d.mu.Unlock()

	fail := func(format string, a ...any) error {
		err := fmt.Errorf("%s: "+format, append([]any{d.name}, a...)...)
		if kerr := d.kill(syscall.SIGKILL); kerr != nil {
			err = errors.Join(err, kerr)
		}
		if d.mountDir != "" {
			if uerr := ForceUnmount(d.mountDir); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		if d.plain {
			err = fmt.Errorf("%w\n--- tessera output (tail) ---\n%s", err, d.log.Tail(16<<10))
		}
		return err
	}
	timer := time.NewTimer(d.readyTimeout)
	defer timer.Stop()
	select {
	case line := <-ready:
		f := lineFields(line)
		if d.want != nil {
			if err := d.want(f); err != nil {
				return fail("ready line %q: %v", line, err)
			}
		}
		if d.mountDir != "" && !IsFuseMounted(d.mountDir) {
			return fail("printed ready but no FUSE mount on %s in /proc/self/mountinfo", d.mountDir)
		}
		d.mu.Lock()
		d.mu.fields = f
		d.mu.Unlock()
		return nil
	case <-p.done:
		return fail("exited before ready: %v", p.waitErr)
	case <-timer.C:
		return fail("no %q line within %v", d.prefix, d.readyTimeout)
	}
}

// scanReady copies r's lines to log and sends the first one starting with
// prefix to ready.
func scanReady(r *os.File, log io.Writer, prefix string, ready chan<- string) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if !sent && strings.HasPrefix(line, prefix) {
			ready <- line
			sent = true
		}
	}
	// Keep draining if the scanner gave up on a giant line.
	_, _ = io.Copy(log, r)
}

// lineFields parses the key=value words of a line.
func lineFields(line string) map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields(line) {
		if k, v, ok := strings.Cut(w, "="); ok {
			m[k] = v
		}
	}
	return m
}

// output returns a writer of one of the child's streams to the log.
func (d *Daemon) output() io.Writer {
	if d.plain {
		return d.log
	}
	return newPrefixWriter(d.log, d.name)
}

// note writes a harness line to the log: "=== meta: EVENT at TIME: DETAIL",
// or "=== cluster: EVENT: DETAIL" in the plain style (DETAIL if not empty).
func (d *Daemon) note(event, detail string) {
	line := "=== cluster: " + event
	if !d.plain {
		line = fmt.Sprintf("=== %s: %s at %s", d.name, event, time.Now().Format(logTime))
	}
	if detail != "" {
		line += ": " + detail
	}
	fmt.Fprintln(d.log, line)
}

// kill sends sig to the child's process group and waits (bounded) for the
// child to exit.
func (d *Daemon) kill(sig syscall.Signal) error {
	d.mu.Lock()
	p := d.mu.p
	if p != nil {
		p.stopped = true
	}
	d.mu.Unlock()
	if p == nil || !d.Running() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not die on %v within 10s", d.name, p.cmd.Process.Pid, sig)
	}
}

// Kill9 kills the daemon's process group with SIGKILL, as a crash would. A
// mount is left behind, stale, for Restart or Close to clean up.
func (d *Daemon) Kill9() error {
	d.note("kill -9", "")
	return d.kill(syscall.SIGKILL)
}

// Stop asks the daemon to stop with SIGTERM and checks the contract: exit
// status 0 within the stop timeout and, for a mount, no mount left. A
// daemon that does not exit is killed after a SIGQUIT (goroutine dump);
// both that and a leftover mount are errors. Stopping a daemon that was
// killed or stopped before is not.
func (d *Daemon) Stop() error {
	d.mu.Lock()
	p := d.mu.p
	stopped := p != nil && p.stopped
	if p != nil {
		p.stopped = true
	}
	d.mu.Unlock()
	var errs []error
	if p != nil && !stopped && !d.Running() {
		errs = append(errs, fmt.Errorf("%s had exited by itself: %v", d.name, d.ExitError()))
	}
	if p != nil && d.Running() {
		pid := p.cmd.Process.Pid
		if !d.plain {
			d.note("SIGTERM", "")
		}
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
			if !d.plain {
				d.note("exited", fmt.Sprint(p.waitErr))
			}
			if p.waitErr != nil {
				errs = append(errs, fmt.Errorf("%s exited on SIGTERM with %v, want status 0", d.name, p.waitErr))
			}
		case <-time.After(d.stopTimeout):
			_ = syscall.Kill(pid, syscall.SIGQUIT)
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
			}
			if err := d.kill(syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, fmt.Errorf("%s did not exit within %v of SIGTERM; killed", d.name, d.stopTimeout))
		}
		if d.mountDir != "" && IsMounted(d.mountDir) {
			errs = append(errs, fmt.Errorf("%s left %s mounted after SIGTERM", d.name, d.mountDir))
		}
	}
	if d.mountDir != "" {
		if err := ForceUnmount(d.mountDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Start starts a daemon that was stopped (Stop, Kill9) again with the same
// arguments (and, for meta and blockd, the same listen address): Stop, then
// Start, is a Restart with an outage as long as the caller likes between.
func (d *Daemon) Start() error { return d.start() }

// Restart stops the daemon if it runs and starts it again with the same
// arguments (and, for meta and blockd, the same listen address).
func (d *Daemon) Restart() error {
	var errs []error
	if d.Running() {
		errs = append(errs, d.Stop())
	}
	if err := d.start(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prefixWriter writes each line to w as "[name] line". Partial lines are
// held until their newline.
type prefixWriter struct {
	w    io.Writer
	name string
	mu   struct {
		sync.Mutex
		partial []byte
	}
}

func newPrefixWriter(w io.Writer, name string) *prefixWriter {
	return &prefixWriter{w: w, name: name}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.partial = append(p.mu.partial, b...)
	for {
		i := bytes.IndexByte(p.mu.partial, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "[%s] %s\n", p.name, p.mu.partial[:i])
		p.mu.partial = p.mu.partial[i+1:]
	}
	if len(p.mu.partial) > 64<<10 { // a giant line without a newline
		fmt.Fprintf(p.w, "[%s] %s\n", p.name, p.mu.partial)
		p.mu.partial = nil
	}
	return len(b), nil
}
