package e2e

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Some checks need another process: POSIX record locks belong to a process,
// and permission checks need another uid. The test binary re-executes itself
// with TESSERA_E2E_HELPER=1; TestMain then runs runHelper instead of the
// tests. A helper does one system call and prints "ok [extra]" or
// "errno N [extra]".

// runHelper is the child's side.
func runHelper(_ string, args []string) int {
	if len(args) < 2 {
		fmt.Println("usage: OP PATH [ARGS]")
		return 2
	}
	op, path := args[0], args[1]
	var extra string
	err := func() error {
		switch op {
		case "stat":
			var st unix.Stat_t
			return unix.Stat(path, &st)
		case "read":
			b, err := os.ReadFile(path)
			extra = strconv.Itoa(len(b))
			return err
		case "write":
			fd, err := unix.Open(path, unix.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			_, err = unix.Write(fd, []byte("x"))
			return err
		case "writestat": // write, then fstat the descriptor: extra is the mode in octal
			fd, err := unix.Open(path, unix.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			if _, err := unix.Write(fd, []byte("x")); err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			extra = strconv.FormatUint(uint64(st.Mode&0o7777), 8)
			return nil
		case "truncate":
			return unix.Truncate(path, 0)
		case "opentrunc", "createtrunc": // open with O_TRUNC (and O_CREAT), then fstat: extra is the mode in octal
			flags := unix.O_WRONLY | unix.O_TRUNC
			if op == "createtrunc" {
				flags |= unix.O_CREAT
			}
			fd, err := unix.Open(path, flags, 0o644)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return err
			}
			extra = strconv.FormatUint(uint64(st.Mode&0o7777), 8)
			return nil
		case "create":
			fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			return unix.Close(fd)
		case "rwloop":
			return rwLoop(path, &extra)
		case "mkdir":
			return unix.Mkdir(path, 0o755)
		case "unlink":
			return unix.Unlink(path)
		case "chmod":
			return unix.Chmod(path, 0o777)
		case "flock":
			fd, err := unix.Open(path, unix.O_RDONLY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		case "setlk", "getlk":
			// setlk PATH START LEN r|w
			if len(args) != 5 {
				return errors.New("usage: setlk|getlk PATH START LEN r|w")
			}
			start, _ := strconv.ParseInt(args[2], 10, 64)
			n, _ := strconv.ParseInt(args[3], 10, 64)
			typ := int16(unix.F_WRLCK)
			if args[4] == "r" {
				typ = unix.F_RDLCK
			}
			fd, err := unix.Open(path, unix.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			lk := unix.Flock_t{Type: typ, Whence: io.SeekStart, Start: start, Len: n}
			if op == "setlk" {
				return unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk)
			}
			if err := unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk); err != nil {
				return err
			}
			extra = fmt.Sprintf("type=%d pid=%d start=%d len=%d", lk.Type, lk.Pid, lk.Start, lk.Len)
			return nil
		}
		return fmt.Errorf("unknown helper op %q", op)
	}()
	var en syscall.Errno
	switch {
	case err == nil:
		fmt.Println(strings.TrimSpace("ok " + extra))
	case errors.As(err, &en):
		fmt.Printf("errno %d %s\n", int(en), extra)
	default:
		fmt.Println("error", err)
		return 2
	}
	return 0
}

// helperResult is what a helper reported: Errno 0 means success.
type helperResult struct {
	Errno syscall.Errno
	Extra string
}

// helper runs one helper operation in a child process, as cred if not nil.
func helper(t testing.TB, cred *syscall.Credential, args ...string) helperResult {
	t.Helper()
	cmd := exec.Command(helperExe(t, cred != nil), args...)
	cmd.Env = append(os.Environ(), envHelper+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = "/"
	cmd.WaitDelay = time.Second
	done := make(chan struct{})
	timer := time.AfterFunc(30*time.Second, func() {
		select {
		case <-done:
		default:
			cmd.Process.Kill()
		}
	})
	out, err := cmd.Output()
	close(done)
	timer.Stop()
	line := strings.TrimSpace(string(out))
	if err != nil {
		t.Fatalf("helper %v: %v: %s", args, err, line)
	}
	f := strings.Fields(line)
	switch {
	case len(f) >= 1 && f[0] == "ok":
		return helperResult{Extra: strings.Join(f[1:], " ")}
	case len(f) >= 2 && f[0] == "errno":
		n, _ := strconv.Atoi(f[1])
		return helperResult{Errno: syscall.Errno(n), Extra: strings.Join(f[2:], " ")}
	}
	t.Fatalf("helper %v: unexpected output %q", args, line)
	return helperResult{}
}

var helperCopy struct {
	once sync.Once
	path string
	err  error
}

// helperExe returns the test binary, or for another uid a world-executable
// copy of it (go test's own build directory is private to root).
func helperExe(t testing.TB, otherUser bool) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !otherUser {
		return exe
	}
	helperCopy.once.Do(func() {
		dst := filepath.Join(suite.tmp, "e2e-helper")
		helperCopy.path, helperCopy.err = dst, copyFile(exe, dst, 0o755)
	})
	if helperCopy.err != nil {
		t.Fatal(helperCopy.err)
	}
	return helperCopy.path
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
