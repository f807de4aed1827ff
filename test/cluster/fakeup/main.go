// Command fakeup is a stand-in for the tessera binary, for testing the test
// harness before (or without) the real one: `fakeup up --data DIR --mount MNT`
// serves DIR/tree through go-fuse's loopback file system and keeps the
// contract of `tessera up` that the harness relies on (ready line, SIGTERM
// unmounts and exits 0, a stale mount on MNT is cleaned up at start).
// `status`, `gc` and `fsck` answer in the expected format with made-up
// block figures (logical = stored); there is no dedup and no block layout.
//
//	go build -o /tmp/fakeup ./test/cluster/fakeup
//	TESSERA_BIN=/tmp/fakeup go test ./test/e2e -run 'TestPosix|TestFSX'
package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"tessera/test/cluster"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fakeup up|status|gc|fsck --data DIR ...")
		os.Exit(2)
	}
	sub := os.Args[1]
	fl := flag.NewFlagSet(sub, flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	data := fl.String("data", "", "data directory")
	mnt := fl.String("mount", "", "mount point (up)")
	fl.Int("block-servers", 3, "ignored")
	fl.Int64("block-size", 4<<20, "ignored")
	fl.Duration("grace", time.Hour, "ignored (gc)")
	if err := fl.Parse(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "fakeup %s: %v\n", sub, err)
		os.Exit(2)
	}
	if *data == "" {
		fmt.Fprintf(os.Stderr, "fakeup %s: --data is required\n", sub)
		os.Exit(2)
	}
	tree := filepath.Join(*data, "tree")
	var err error
	switch sub {
	case "up":
		err = up(tree, *mnt)
	case "status":
		err = status(tree)
	case "gc":
	case "fsck":
		fmt.Println("fsck: clean")
	default:
		err = fmt.Errorf("unknown command %q", sub)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeup %s: %v\n", sub, err)
		os.Exit(1)
	}
}

func up(tree, mnt string) error {
	if mnt == "" {
		return fmt.Errorf("--mount is required")
	}
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return err
	}
	if err := cluster.ForceUnmount(mnt); err != nil {
		return fmt.Errorf("clean stale mount: %w", err)
	}
	root, err := gofs.NewLoopbackRoot(tree)
	if err != nil {
		return err
	}
	srv, err := gofs.Mount(mnt, root, &gofs.Options{NullPermissions: true, MountOptions: fuse.MountOptions{
		AllowOther:  true,
		DirectMount: true,
		FsName:      "fakeup",
		Name:        "fakeup",
		Options:     []string{"default_permissions"},
	}})
	if err != nil {
		return err
	}
	// Catch the signals before saying ready: a harness may stop the
	// process the moment it reads the line.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	fmt.Printf("tessera up: ready mount=%s meta=127.0.0.1:0\n", mnt)
	go func() {
		<-sig
		for i := 0; ; i++ {
			if err := srv.Unmount(); err == nil || i == 50 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	srv.Wait()
	return nil
}

func status(tree string) error {
	var files, bytes int64
	err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Print(strings.Join([]string{
		fmt.Sprintf("files: %d", files),
		fmt.Sprintf("logical bytes: %d", bytes),
		fmt.Sprintf("stored block bytes: %d", bytes),
		"blocks: 0",
		"servers: 0",
	}, "\n") + "\n")
	return nil
}
