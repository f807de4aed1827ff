package metrics

// The gofuse.RawFileSystem methods of the FUSE decorator (fuse.go) that
// answer with a status: each records its request under its opcode name.

import (
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
)

// Lookup implements gofuse.RawFileSystem.
func (f *fuseFS) Lookup(cancel <-chan struct{}, header *gofuse.InHeader, name string, out *gofuse.EntryOut) (st gofuse.Status) {
	defer f.m.done("lookup", f.m.begin(), &st)
	return f.RawFileSystem.Lookup(cancel, header, name, out)
}

// GetAttr implements gofuse.RawFileSystem.
func (f *fuseFS) GetAttr(cancel <-chan struct{}, input *gofuse.GetAttrIn, out *gofuse.AttrOut) (st gofuse.Status) {
	defer f.m.done("getattr", f.m.begin(), &st)
	return f.RawFileSystem.GetAttr(cancel, input, out)
}

// SetAttr implements gofuse.RawFileSystem.
func (f *fuseFS) SetAttr(cancel <-chan struct{}, input *gofuse.SetAttrIn, out *gofuse.AttrOut) (st gofuse.Status) {
	defer f.m.done("setattr", f.m.begin(), &st)
	return f.RawFileSystem.SetAttr(cancel, input, out)
}

// Mknod implements gofuse.RawFileSystem.
func (f *fuseFS) Mknod(cancel <-chan struct{}, input *gofuse.MknodIn, name string, out *gofuse.EntryOut) (st gofuse.Status) {
	defer f.m.done("mknod", f.m.begin(), &st)
	return f.RawFileSystem.Mknod(cancel, input, name, out)
}

// Mkdir implements gofuse.RawFileSystem.
func (f *fuseFS) Mkdir(cancel <-chan struct{}, input *gofuse.MkdirIn, name string, out *gofuse.EntryOut) (st gofuse.Status) {
	defer f.m.done("mkdir", f.m.begin(), &st)
	return f.RawFileSystem.Mkdir(cancel, input, name, out)
}

// Unlink implements gofuse.RawFileSystem.
func (f *fuseFS) Unlink(cancel <-chan struct{}, header *gofuse.InHeader, name string) (st gofuse.Status) {
	defer f.m.done("unlink", f.m.begin(), &st)
	return f.RawFileSystem.Unlink(cancel, header, name)
}

// Rmdir implements gofuse.RawFileSystem.
func (f *fuseFS) Rmdir(cancel <-chan struct{}, header *gofuse.InHeader, name string) (st gofuse.Status) {
	defer f.m.done("rmdir", f.m.begin(), &st)
	return f.RawFileSystem.Rmdir(cancel, header, name)
}

// Rename implements gofuse.RawFileSystem.
func (f *fuseFS) Rename(cancel <-chan struct{}, input *gofuse.RenameIn, oldName string, newName string) (st gofuse.Status) {
	defer f.m.done("rename", f.m.begin(), &st)
	return f.RawFileSystem.Rename(cancel, input, oldName, newName)
}

// Link implements gofuse.RawFileSystem.
func (f *fuseFS) Link(cancel <-chan struct{}, input *gofuse.LinkIn, filename string, out *gofuse.EntryOut) (st gofuse.Status) {
	defer f.m.done("link", f.m.begin(), &st)
	return f.RawFileSystem.Link(cancel, input, filename, out)
}

// Symlink implements gofuse.RawFileSystem.
func (f *fuseFS) Symlink(cancel <-chan struct{}, header *gofuse.InHeader, pointedTo string, linkName string, out *gofuse.EntryOut) (st gofuse.Status) {
	defer f.m.done("symlink", f.m.begin(), &st)
	return f.RawFileSystem.Symlink(cancel, header, pointedTo, linkName, out)
}

// Readlink implements gofuse.RawFileSystem.
func (f *fuseFS) Readlink(cancel <-chan struct{}, header *gofuse.InHeader) (out []byte, st gofuse.Status) {
	defer f.m.done("readlink", f.m.begin(), &st)
	return f.RawFileSystem.Readlink(cancel, header)
}

// Access implements gofuse.RawFileSystem.
func (f *fuseFS) Access(cancel <-chan struct{}, input *gofuse.AccessIn) (st gofuse.Status) {
	defer f.m.done("access", f.m.begin(), &st)
	return f.RawFileSystem.Access(cancel, input)
}

// GetXAttr implements gofuse.RawFileSystem.
func (f *fuseFS) GetXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string, dest []byte) (sz uint32, st gofuse.Status) {
	defer f.m.done("getxattr", f.m.begin(), &st)
	return f.RawFileSystem.GetXAttr(cancel, header, attr, dest)
}

// ListXAttr implements gofuse.RawFileSystem.
func (f *fuseFS) ListXAttr(cancel <-chan struct{}, header *gofuse.InHeader, dest []byte) (sz uint32, st gofuse.Status) {
	defer f.m.done("listxattr", f.m.begin(), &st)
	return f.RawFileSystem.ListXAttr(cancel, header, dest)
}

// SetXAttr implements gofuse.RawFileSystem.
func (f *fuseFS) SetXAttr(cancel <-chan struct{}, input *gofuse.SetXAttrIn, attr string, data []byte) (st gofuse.Status) {
	defer f.m.done("setxattr", f.m.begin(), &st)
	return f.RawFileSystem.SetXAttr(cancel, input, attr, data)
}

// RemoveXAttr implements gofuse.RawFileSystem.
func (f *fuseFS) RemoveXAttr(cancel <-chan struct{}, header *gofuse.InHeader, attr string) (st gofuse.Status) {
	defer f.m.done("removexattr", f.m.begin(), &st)
	return f.RawFileSystem.RemoveXAttr(cancel, header, attr)
}

// Create implements gofuse.RawFileSystem.
func (f *fuseFS) Create(cancel <-chan struct{}, input *gofuse.CreateIn, name string, out *gofuse.CreateOut) (st gofuse.Status) {
	defer f.m.done("create", f.m.begin(), &st)
	return f.RawFileSystem.Create(cancel, input, name, out)
}

// Tmpfile implements gofuse.RawFileSystem.
func (f *fuseFS) Tmpfile(cancel <-chan struct{}, input *gofuse.CreateIn, out *gofuse.CreateOut) (st gofuse.Status) {
	defer f.m.done("tmpfile", f.m.begin(), &st)
	return f.RawFileSystem.Tmpfile(cancel, input, out)
}

// Open implements gofuse.RawFileSystem.
func (f *fuseFS) Open(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) (st gofuse.Status) {
	defer f.m.done("open", f.m.begin(), &st)
	return f.RawFileSystem.Open(cancel, input, out)
}

// Lseek implements gofuse.RawFileSystem.
func (f *fuseFS) Lseek(cancel <-chan struct{}, in *gofuse.LseekIn, out *gofuse.LseekOut) (st gofuse.Status) {
	defer f.m.done("lseek", f.m.begin(), &st)
	return f.RawFileSystem.Lseek(cancel, in, out)
}

// Flush implements gofuse.RawFileSystem.
func (f *fuseFS) Flush(cancel <-chan struct{}, input *gofuse.FlushIn) (st gofuse.Status) {
	defer f.m.done("flush", f.m.begin(), &st)
	return f.RawFileSystem.Flush(cancel, input)
}

// Fsync implements gofuse.RawFileSystem.
func (f *fuseFS) Fsync(cancel <-chan struct{}, input *gofuse.FsyncIn) (st gofuse.Status) {
	defer f.m.done("fsync", f.m.begin(), &st)
	return f.RawFileSystem.Fsync(cancel, input)
}

// Fallocate implements gofuse.RawFileSystem.
func (f *fuseFS) Fallocate(cancel <-chan struct{}, input *gofuse.FallocateIn) (st gofuse.Status) {
	defer f.m.done("fallocate", f.m.begin(), &st)
	return f.RawFileSystem.Fallocate(cancel, input)
}

// OpenDir implements gofuse.RawFileSystem.
func (f *fuseFS) OpenDir(cancel <-chan struct{}, input *gofuse.OpenIn, out *gofuse.OpenOut) (st gofuse.Status) {
	defer f.m.done("opendir", f.m.begin(), &st)
	return f.RawFileSystem.OpenDir(cancel, input, out)
}

// ReadDir implements gofuse.RawFileSystem.
func (f *fuseFS) ReadDir(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) (st gofuse.Status) {
	defer f.m.done("readdir", f.m.begin(), &st)
	return f.RawFileSystem.ReadDir(cancel, input, out)
}

// ReadDirPlus implements gofuse.RawFileSystem.
func (f *fuseFS) ReadDirPlus(cancel <-chan struct{}, input *gofuse.ReadIn, out *gofuse.DirEntryList) (st gofuse.Status) {
	defer f.m.done("readdirplus", f.m.begin(), &st)
	return f.RawFileSystem.ReadDirPlus(cancel, input, out)
}

// FsyncDir implements gofuse.RawFileSystem.
func (f *fuseFS) FsyncDir(cancel <-chan struct{}, input *gofuse.FsyncIn) (st gofuse.Status) {
	defer f.m.done("fsyncdir", f.m.begin(), &st)
	return f.RawFileSystem.FsyncDir(cancel, input)
}

// StatFs implements gofuse.RawFileSystem.
func (f *fuseFS) StatFs(cancel <-chan struct{}, input *gofuse.InHeader, out *gofuse.StatfsOut) (st gofuse.Status) {
	defer f.m.done("statfs", f.m.begin(), &st)
	return f.RawFileSystem.StatFs(cancel, input, out)
}

// GetLk implements gofuse.RawFileSystem.
func (f *fuseFS) GetLk(cancel <-chan struct{}, input *gofuse.LkIn, out *gofuse.LkOut) (st gofuse.Status) {
	defer f.m.done("getlk", f.m.begin(), &st)
	return f.RawFileSystem.GetLk(cancel, input, out)
}

// SetLk implements gofuse.RawFileSystem.
func (f *fuseFS) SetLk(cancel <-chan struct{}, input *gofuse.LkIn) (st gofuse.Status) {
	defer f.m.done("setlk", f.m.begin(), &st)
	return f.RawFileSystem.SetLk(cancel, input)
}

// SetLkw implements gofuse.RawFileSystem.
func (f *fuseFS) SetLkw(cancel <-chan struct{}, input *gofuse.LkIn) (st gofuse.Status) {
	defer f.m.done("setlkw", f.m.begin(), &st)
	return f.RawFileSystem.SetLkw(cancel, input)
}
