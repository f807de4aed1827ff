package main

import (
	"context"
	"fmt"

	"tessera/internal/clusters"
	"tessera/internal/meta"
	"tessera/internal/mountroot"
)

// source is what `tessera mount [NAME:/dir] MNT` mounts where.
type source struct {
	cluster string // "" when none was named
	dir     string // the directory of the cluster mounted ("/" the root)
	mnt     string
}

// mountSource reads the mount's arguments: MNT, or NAME:/dir MNT.
func mountSource(args []string) (source, error) {
	switch len(args) {
	case 1:
		return source{dir: "/", mnt: args[0]}, nil
	case 2:
		name, dir, ok, err := clusters.ParseSource(args[0])
		if err != nil {
			return source{}, fmt.Errorf("%w: source %s: %v", errUsage, args[0], err)
		}
		if !ok {
			return source{}, fmt.Errorf("%w: source %q is not NAME:/dir (a cluster's name and a directory in it)", errUsage, args[0])
		}
		return source{cluster: name, dir: dir, mnt: args[1]}, nil
	}
	return source{}, fmt.Errorf("%w: want [NAME:/dir] MOUNTPOINT (see tessera mount -h)", errUsage)
}

// ready is the source's part of the ready line.
func (s source) ready() string {
	out := ""
	if s.cluster != "" {
		out += " cluster=" + s.cluster
	}
	if s.dir != "/" {
		out += " root=" + s.dir
	}
	return out
}

// mountRoot returns api seen from dir, which must be a directory.
func mountRoot(ctx context.Context, api meta.API, dir string) (meta.API, error) {
	if dir == "/" || dir == "" {
		return api, nil
	}
	ino, err := mountroot.Walk(ctx, api, dir)
	if err != nil {
		return nil, err
	}
	return mountroot.New(api, ino), nil
}
