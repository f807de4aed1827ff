package vfs

import "tessera/internal/meta"

// Ready reports whether the mount remembers ino as in no fileset.
func (v *FS) Ready(ino meta.Ino) bool {
	_, ok := v.ready.m.Load(ino)
	return ok
}

// AddReady remembers ino as in no fileset (as Fill does).
func (v *FS) AddReady(ino meta.Ino) { v.ready.add(ino) }

// ReadyMax is readyMax.
const ReadyMax = readyMax
