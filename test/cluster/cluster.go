package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ReadyPrefix starts the line `tessera up` prints once its mount is usable.
const ReadyPrefix = "tessera up: ready"

// Options describe one `tessera up`.
type Options struct {
	Bin          string   // the tessera binary
	DataDir      string   // --data
	MountDir     string   // --mount; created if missing
	BlockServers int      // --block-servers; 0 leaves the binary's default
	BlockSize    int64    // --block-size; 0 leaves the binary's default
	Args         []string // more flags for `up`
	Env          []string // added to the test's environment

	ReadyTimeout time.Duration // default 30 s
	StopTimeout  time.Duration // default 20 s
}

// Cluster is a running (or stopped) `tessera up`.
type Cluster struct {
	opts Options
	log  *logBuf // stdout and stderr of every run, interleaved

	mu struct {
		sync.Mutex
		p        *proc
		metaAddr string
		runs     int
	}
}

// proc is one child process.
type proc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when Wait returned
	waitErr error         // valid after done
	stopped bool          // we signalled it (guarded by Cluster.mu)
}

// Start launches `tessera up` and waits for its ready line. On error nothing
// is left running or mounted.
func Start(opts Options) (*Cluster, error) {
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 30 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 20 * time.Second
	}
	if opts.Bin == "" || opts.DataDir == "" || opts.MountDir == "" {
		return nil, errors.New("cluster: Bin, DataDir and MountDir are required")
	}
	c := &Cluster{opts: opts, log: newLogBuf(1 << 20)}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

// Opts returns the options the cluster runs with.
func (c *Cluster) Opts() Options { return c.opts }

// Mount returns the mount point.
func (c *Cluster) Mount() string { return c.opts.MountDir }

// DataDir returns the data directory.
func (c *Cluster) DataDir() string { return c.opts.DataDir }

// MetaAddr returns the meta address announced by the latest ready line.
func (c *Cluster) MetaAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.metaAddr
}

// LogMark returns a position in the daemon's output for LogSince.
func (c *Cluster) LogMark() int64 { return c.log.Mark() }

// LogSince returns the daemon output after mark (as far as it is kept).
func (c *Cluster) LogSince(mark int64) string { return c.log.Since(mark) }

// LogTail returns the last n bytes of the daemon's output.
func (c *Cluster) LogTail(n int) string { return c.log.Tail(n) }

// Running reports whether the current child is alive.
func (c *Cluster) Running() bool {
	c.mu.Lock()
	p := c.mu.p
	c.mu.Unlock()
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
func (c *Cluster) ExitError() error {
	c.mu.Lock()
	p := c.mu.p
	c.mu.Unlock()
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

func (c *Cluster) start() error {
	if c.Running() {
		return errors.New("cluster: already running")
	}
	if err := os.MkdirAll(c.opts.DataDir, 0o755); err != nil {
		return err
	}
	// A stale mount left by a killed run is the daemon's to clean up.
	if !IsMounted(c.opts.MountDir) {
		if err := os.MkdirAll(c.opts.MountDir, 0o755); err != nil {
			return err
		}
	}
	args := []string{"up", "--data", c.opts.DataDir, "--mount", c.opts.MountDir}
	if c.opts.BlockServers > 0 {
		args = append(args, "--block-servers", strconv.Itoa(c.opts.BlockServers))
	}
	if c.opts.BlockSize > 0 {
		args = append(args, "--block-size", strconv.FormatInt(c.opts.BlockSize, 10))
	}
	args = append(args, c.opts.Args...)

	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(c.opts.Bin, args...)
	cmd.Env = append(os.Environ(), c.opts.Env...)
	cmd.Stdout = outW
	cmd.Stderr = c.log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// A test binary that dies (panic, timeout) takes the daemon along,
		// and SIGTERM lets the daemon unmount on its way out.
		Pdeathsig: syscall.SIGTERM,
	}
	c.mu.Lock()
	c.mu.runs++
	run := c.mu.runs
	c.mu.Unlock()
	fmt.Fprintf(c.log, "=== cluster: run %d: %s %s\n", run, c.opts.Bin, strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("start %s: %w", c.opts.Bin, err)
	}
	outW.Close()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	ready := make(chan string, 1)
	go scanStdout(outR, c.log, ready)
	c.mu.Lock()
	c.mu.p = p
	c.mu.Unlock()

	fail := func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		if kerr := c.kill(syscall.SIGKILL); kerr != nil {
			err = errors.Join(err, kerr)
		}
		if uerr := ForceUnmount(c.opts.MountDir); uerr != nil {
			err = errors.Join(err, uerr)
		}
		return fmt.Errorf("%w\n--- tessera output (tail) ---\n%s", err, c.log.Tail(16<<10))
	}
	timer := time.NewTimer(c.opts.ReadyTimeout)
	defer timer.Stop()
	select {
	case line := <-ready:
		f := lineFields(line)
		if f["mount"] != c.opts.MountDir {
			return fail("tessera up: ready line %q: want mount=%s", line, c.opts.MountDir)
		}
		if f["meta"] == "" {
			return fail("tessera up: ready line %q has no meta=ADDR", line)
		}
		if !IsFuseMounted(c.opts.MountDir) {
			return fail("tessera up: printed ready but no FUSE mount on %s in /proc/self/mountinfo", c.opts.MountDir)
		}
		c.mu.Lock()
		c.mu.metaAddr = f["meta"]
		c.mu.Unlock()
		return nil
	case <-p.done:
		return fail("tessera up exited before ready: %v", p.waitErr)
	case <-timer.C:
		return fail("tessera up: no %q line within %v", ReadyPrefix, c.opts.ReadyTimeout)
	}
}

func scanStdout(r *os.File, log io.Writer, ready chan<- string) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(log, line)
		if !sent && strings.HasPrefix(line, ReadyPrefix) {
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

// kill sends sig to the child's whole process group and waits for the
// child to exit (bounded).
func (c *Cluster) kill(sig syscall.Signal) error {
	c.mu.Lock()
	p := c.mu.p
	if p != nil {
		p.stopped = true
	}
	c.mu.Unlock()
	if p == nil || !c.Running() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("tessera up (pid %d) did not die on %v within 10s", p.cmd.Process.Pid, sig)
	}
}

// Kill9 kills the daemon's process group with SIGKILL, as a crash would. The
// mount is left behind, stale, for the next Start/Restart (or Close) to
// clean up.
func (c *Cluster) Kill9() error {
	fmt.Fprintf(c.log, "=== cluster: kill -9\n")
	return c.kill(syscall.SIGKILL)
}

// Stop asks the daemon to stop with SIGTERM and checks the contract: exit
// status 0 within StopTimeout and no mount left. A daemon that does not exit
// is killed (after a SIGQUIT for a goroutine dump) and a mount it leaves is
// detached; both are reported as errors.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	p := c.mu.p
	stopped := p != nil && p.stopped
	if p != nil {
		p.stopped = true
	}
	c.mu.Unlock()
	var errs []error
	if p != nil && !stopped && !c.Running() {
		errs = append(errs, fmt.Errorf("tessera up had exited by itself: %v", c.ExitError()))
	}
	if p != nil && c.Running() {
		pid := p.cmd.Process.Pid
		_ = syscall.Kill(pid, syscall.SIGTERM)
		select {
		case <-p.done:
			if p.waitErr != nil {
				errs = append(errs, fmt.Errorf("tessera up exited on SIGTERM with %v, want status 0", p.waitErr))
			}
		case <-time.After(c.opts.StopTimeout):
			_ = syscall.Kill(pid, syscall.SIGQUIT)
			select {
			case <-p.done:
			case <-time.After(2 * time.Second):
			}
			if err := c.kill(syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, fmt.Errorf("tessera up did not exit within %v of SIGTERM; killed", c.opts.StopTimeout))
		}
		if IsMounted(c.opts.MountDir) {
			errs = append(errs, fmt.Errorf("tessera up left %s mounted after SIGTERM", c.opts.MountDir))
		}
	}
	if err := ForceUnmount(c.opts.MountDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Restart stops the daemon (if it runs) and starts it again on the same data
// directory and mount point. After Kill9 the new daemon finds a stale mount,
// which the contract says it cleans up itself.
func (c *Cluster) Restart() error {
	var errs []error
	if c.Running() {
		errs = append(errs, c.Stop())
	}
	if err := c.start(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close stops the daemon and makes sure nothing stays mounted. Call it from
// every test's cleanup, whatever happened before.
func (c *Cluster) Close() error {
	err := c.Stop()
	if uerr := ForceUnmount(c.opts.MountDir); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return err
}

// Result is what a one-shot subcommand printed.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// Run executes `tessera SUB --data DIR ARGS...` and waits for it (bounded by
// ctx). A non-zero exit is not an error; failing to run is.
func (c *Cluster) Run(ctx context.Context, sub string, args ...string) (Result, error) {
	return RunBin(ctx, c.opts.Bin, append([]string{sub, "--data", c.opts.DataDir}, args...)...)
}

// RunBin executes bin with args in its own process group.
func RunBin(ctx context.Context, bin string, args ...string) (Result, error) {
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout = &out
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	res := Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		res.ExitCode = ee.ExitCode()
		err = nil
	default:
		return res, fmt.Errorf("%s %s: %w (stderr: %s)", bin, strings.Join(args, " "), err, res.Stderr)
	}
	return res, nil
}

// Status runs `tessera status` and parses its "key: value" lines.
func (c *Cluster) Status(ctx context.Context) (Status, error) {
	res, err := c.Run(ctx, "status")
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("tessera status: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	return ParseStatus(res.Stdout), nil
}

// Status holds `tessera status` output keyed by the text before the first
// colon of each line (trimmed, lower case).
type Status map[string]string

// ParseStatus parses "key: value" lines; other lines are ignored.
func ParseStatus(out string) Status {
	s := Status{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		s[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return s
}

// Int returns the leading integer of key's value ("123", "123 (1.2 MiB)").
func (s Status) Int(key string) (int64, error) {
	v, ok := s[key]
	if !ok {
		return 0, fmt.Errorf("tessera status: no %q line (have %v)", key, s.keys())
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, fmt.Errorf("tessera status: %q is empty", key)
	}
	n, err := strconv.ParseInt(strings.TrimRight(f[0], ","), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tessera status: %s: %q does not start with a plain integer", key, v)
	}
	return n, nil
}

func (s Status) keys() []string {
	var ks []string
	for k := range s {
		ks = append(ks, k)
	}
	return ks
}
