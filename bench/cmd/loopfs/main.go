// Command loopfs is go-fuse's example/loopback (same library version as
// Tessera, same mount options: 1 s attr/entry timeouts, allow_other +
// default_permissions) with one difference: by default it does NOT hand
// backing files to the kernel (FUSE passthrough, FOPEN_PASSTHROUGH, Linux
// 6.9+ when run as root). The stock example does, so its reads and writes
// never reach the daemon; loopfs makes every read and write a FUSE request
// served from user space, which is the floor a user-space data path like
// Tessera's can be compared with.
//
//	loopfs [-allow-other] [-kernel-passthrough] MOUNTPOINT ORIGINAL
//
// It unmounts and exits 0 on SIGINT/SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a LoopbackNode whose open files hide PassthroughFd.
type node struct {
	fs.LoopbackNode
}

var (
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.NodeCreater)((*node)(nil))
)

// userFile forwards every file operation of *fs.LoopbackFile except
// PassthroughFd, so go-fuse never registers a kernel backing file.
type userFile struct {
	fs.FileReleaser
	fs.FileGetattrer
	fs.FileStatxer
	fs.FileReader
	fs.FileWriter
	fs.FileGetlker
	fs.FileSetlker
	fs.FileSetlkwer
	fs.FileLseeker
	fs.FileFlusher
	fs.FileFsyncer
	fs.FileSetattrer
	fs.FileAllocater
	fs.FileIoctler
}

func wrap(fh fs.FileHandle) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	return &userFile{lf, lf, lf, lf, lf, lf, lf, lf, lf, lf, lf, lf, lf, lf}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno == 0 {
		fh = wrap(fh)
	}
	return fh, fl, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno == 0 {
		fh = wrap(fh)
	}
	return in, fh, fl, errno
}

func main() {
	log.SetFlags(log.Lmicroseconds)
	other := flag.Bool("allow-other", false, "mount with -o allowother")
	kpt := flag.Bool("kernel-passthrough", false, "let the kernel serve reads/writes from the backing files (like example/loopback)")
	debug := flag.Bool("debug", false, "print FUSE debugging messages")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: loopfs [-allow-other] [-kernel-passthrough] MOUNTPOINT ORIGINAL")
		os.Exit(2)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(flag.Arg(1), &st); err != nil {
		log.Fatalf("stat %s: %v", flag.Arg(1), err)
	}
	root := &fs.LoopbackRoot{Path: flag.Arg(1), Dev: uint64(st.Dev)}
	var rootNode fs.InodeEmbedder
	if *kpt {
		rootNode = &fs.LoopbackNode{RootData: root}
	} else {
		root.NewNode = func(r *fs.LoopbackRoot, parent *fs.Inode, name string, st *syscall.Stat_t) fs.InodeEmbedder {
			return &node{fs.LoopbackNode{RootData: r}}
		}
		rootNode = &node{fs.LoopbackNode{RootData: root}}
	}
	root.RootNode = rootNode

	sec := time.Second
	opts := &fs.Options{
		AttrTimeout:     &sec,
		EntryTimeout:    &sec,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			AllowOther: *other,
			Debug:      *debug,
			FsName:     flag.Arg(1),
			Name:       "loopfs",
		},
	}
	if *other {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "default_permissions")
	}
	server, err := fs.Mount(flag.Arg(0), rootNode, opts)
	if err != nil {
		log.Fatalf("mount: %v", err)
	}
	log.Printf("mounted %s on %s (kernel passthrough %v)", flag.Arg(1), flag.Arg(0), *kpt)
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-c
		_ = server.Unmount()
	}()
	server.Wait()
}
