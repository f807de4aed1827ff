package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// Cluster is a running (or stopped) `tessera up`: a Daemon in the plain
// log style, whose start, Stop, Kill9 and Restart it shares.
type Cluster struct {
	opts Options
	d    *Daemon
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
	args := []string{"up", "--data", opts.DataDir, "--mount", opts.MountDir}
	if opts.BlockServers > 0 {
		args = append(args, "--block-servers", strconv.Itoa(opts.BlockServers))
	}
	if opts.BlockSize > 0 {
		args = append(args, "--block-size", strconv.FormatInt(opts.BlockSize, 10))
	}
	c := &Cluster{opts: opts, d: &Daemon{
		name: "tessera up", bin: opts.Bin, args: append(args, opts.Args...), prefix: ReadyPrefix,
		want: func(f map[string]string) error {
			if f["mount"] != opts.MountDir {
				return fmt.Errorf("want mount=%s", opts.MountDir)
			}
			if f["meta"] == "" {
				return errors.New("no meta=ADDR")
			}
			return nil
		},
		mountDir: opts.MountDir, dataDir: opts.DataDir, env: opts.Env, log: newLogBuf(1 << 20), plain: true,
		readyTimeout: opts.ReadyTimeout, stopTimeout: opts.StopTimeout,
	}}
	if err := c.d.start(); err != nil {
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
func (c *Cluster) MetaAddr() string { return c.d.Field("meta") }

// Field returns key=value of the latest ready line (metrics=ADDR with
// --metrics).
func (c *Cluster) Field(key string) string { return c.d.Field(key) }

// LogMark returns a position in the daemon's output for LogSince.
func (c *Cluster) LogMark() int64 { return c.d.log.Mark() }

// LogSince returns the daemon output after mark (as far as it is kept).
func (c *Cluster) LogSince(mark int64) string { return c.d.log.Since(mark) }

// LogTail returns the last n bytes of the daemon's output.
func (c *Cluster) LogTail(n int) string { return c.d.log.Tail(n) }

// Running reports whether the current child is alive.
func (c *Cluster) Running() bool { return c.d.Running() }

// ExitError returns why the current child ended (nil while it runs or after
// a clean exit).
func (c *Cluster) ExitError() error { return c.d.ExitError() }

// Kill9 kills the daemon's process group with SIGKILL, as a crash would. The
// mount is left behind, stale, for the next Start/Restart (or Close) to
// clean up.
func (c *Cluster) Kill9() error { return c.d.Kill9() }

// Stop asks the daemon to stop with SIGTERM and checks the contract: exit
// status 0 within StopTimeout and no mount left. A daemon that does not exit
// is killed (after a SIGQUIT for a goroutine dump) and a mount it leaves is
// detached; both are reported as errors.
func (c *Cluster) Stop() error { return c.d.Stop() }

// Restart stops the daemon (if it runs) and starts it again on the same data
// directory and mount point. After Kill9 the new daemon finds a stale mount,
// which the contract says it cleans up itself.
func (c *Cluster) Restart() error { return c.d.Restart() }

// PID returns the process id of `tessera up` (of its last run; 0 if none).
func (c *Cluster) PID() int { return c.d.PID() }

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
	return runBinEnv(ctx, bin, nil, args...)
}

// runBinEnv is RunBin with env added to the test's environment.
func runBinEnv(ctx context.Context, bin string, env []string, args ...string) (Result, error) {
	var out, errb strings.Builder
	cmd := exec.CommandContext(ctx, bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
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
