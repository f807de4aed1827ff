package metarpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/rpc"
	"sync"
	"time"

	"tessera/internal/block"
	"tessera/internal/meta"
)

// serviceName is the net/rpc service every method is registered under.
const serviceName = "Meta"

// Serve answers meta RPCs on ln with api until ln is closed; then it closes
// the connections it accepted, waits for their calls to finish and returns
// nil. A nil logger discards. It returns other Accept errors.
func Serve(ln net.Listener, api meta.API, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := rpc.NewServer()
	if err := srv.RegisterName(serviceName, &handler{api: api, ctx: ctx}); err != nil {
		return err
	}
	var conns struct {
		sync.Mutex
		m map[net.Conn]struct{}
	}
	conns.m = map[net.Conn]struct{}{}
	var wg sync.WaitGroup
	defer func() {
		cancel()
		conns.Lock()
		for c := range conns.m {
			c.Close()
		}
		conns.Unlock()
		wg.Wait()
	}()
	logger.Info("meta rpc listening", "addr", ln.Addr().String())
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		conns.Lock()
		conns.m[c] = struct{}{}
		conns.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			logger.Debug("meta rpc connection", "remote", c.RemoteAddr().String())
			srv.ServeConn(c)
			conns.Lock()
			delete(conns.m, c)
			conns.Unlock()
		}()
	}
}

// handler is the receiver net/rpc calls; every method returns nil and puts
// the API's error in the reply, so that errors keep their class.
type handler struct {
	api meta.API
	ctx context.Context // cancelled when Serve returns
}

func (h *handler) callCtx(a *Args) (context.Context, context.CancelFunc) {
	if a.Timeout > 0 {
		return context.WithTimeout(h.ctx, time.Duration(a.Timeout))
	}
	return context.WithCancel(h.ctx)
}

// do runs fn with the call's context and records its error in r.
func (h *handler) do(a *Args, r *Reply, fn func(ctx context.Context) error) error {
	ctx, cancel := h.callCtx(a)
	defer cancel()
	r.Err = encodeError(fn(ctx))
	return nil
}

// Lookup serves meta.API.Lookup.
func (h *handler) Lookup(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Lookup(ctx, a.Parent, a.Name)
		return err
	})
}

// GetAttr serves meta.API.GetAttr.
func (h *handler) GetAttr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).GetAttr(ctx, a.Ino)
		return err
	})
}

// SetAttr serves meta.API.SetAttr.
func (h *handler) SetAttr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).SetAttr(ctx, a.Ino, a.SetAttr)
		return err
	})
}

// Create serves meta.API.Create.
func (h *handler) Create(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Create(ctx, a.Create)
		return err
	})
}

// Link serves meta.API.Link.
func (h *handler) Link(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Link(ctx, a.Ino, a.NewParent, a.NewName)
		return err
	})
}

// Unlink serves meta.API.Unlink.
func (h *handler) Unlink(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Unlink(ctx, a.Parent, a.Name, a.Ino)
		return err
	})
}

// Rmdir serves meta.API.Rmdir.
func (h *handler) Rmdir(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).Rmdir(ctx, a.Parent, a.Name) })
}

// Rename serves meta.API.Rename.
func (h *handler) Rename(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Rename(ctx, a.Parent, a.Name, a.NewParent, a.NewName, a.Flags)
		return err
	})
}

// ReadDir serves meta.API.ReadDir.
func (h *handler) ReadDir(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Ents, r.More, err = h.on(a).ReadDir(ctx, a.Ino, a.After, a.Limit, a.Plus)
		return err
	})
}

// GetRecipe serves meta.API.GetRecipe.
func (h *handler) GetRecipe(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Recipe, err = h.on(a).GetRecipe(ctx, a.Ino, a.First, a.Count)
		return err
	})
}

// Commit serves meta.API.Commit.
func (h *handler) Commit(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).Commit(ctx, a.Commit)
		return err
	})
}

// HoldOpen serves meta.API.HoldOpen.
func (h *handler) HoldOpen(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Inode, err = h.on(a).HoldOpen(ctx, a.Ino)
		return err
	})
}

// ReleaseOpen serves meta.API.ReleaseOpen.
func (h *handler) ReleaseOpen(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).ReleaseOpen(ctx, a.Ino) })
}

// Reap serves meta.API.Reap.
func (h *handler) Reap(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).Reap(ctx, a.Ino) })
}

// GetXattr serves meta.API.GetXattr.
func (h *handler) GetXattr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Value, err = h.on(a).GetXattr(ctx, a.Ino, a.Name)
		return err
	})
}

// SetXattr serves meta.API.SetXattr.
func (h *handler) SetXattr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).SetXattr(ctx, a.Ino, a.Name, a.Value, a.Flags) })
}

// ListXattr serves meta.API.ListXattr.
func (h *handler) ListXattr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Names, err = h.on(a).ListXattr(ctx, a.Ino)
		return err
	})
}

// RemoveXattr serves meta.API.RemoveXattr.
func (h *handler) RemoveXattr(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).RemoveXattr(ctx, a.Ino, a.Name) })
}

// Sync serves meta.API.Sync.
func (h *handler) Sync(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.on(a).Sync(ctx) })
}

// StatFS serves meta.API.StatFS.
func (h *handler) StatFS(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.StatFS, err = h.on(a).StatFS(ctx)
		return err
	})
}

// Servers serves meta.API.Servers.
func (h *handler) Servers(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Map, err = h.on(a).Servers(ctx)
		return err
	})
}

// RegisterServer serves meta.API.RegisterServer.
func (h *handler) RegisterServer(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Map, err = h.on(a).RegisterServer(ctx, a.Server)
		return err
	})
}

// ListBlocks serves one page of meta.API.WalkBlocks: meta.BlockLister's
// ListBlocks when the API has it, else a walk that skips to the cursor.
func (h *handler) ListBlocks(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		if l, ok := h.api.(meta.BlockLister); ok {
			r.Refs, r.More, err = l.ListBlocks(ctx, a.Ino, a.First, a.Limit)
			return err
		}
		r.Refs, r.More, err = walkPage(ctx, h.api, a.Ino, a.First, a.Limit)
		return err
	})
}

// errPageFull stops walkPage's walk.
var errPageFull = errors.New("page full")

func walkPage(ctx context.Context, api meta.API, afterIno meta.Ino, afterIndex uint64, limit int) ([]meta.BlockRef, bool, error) {
	if limit <= 0 {
		limit = meta.WalkPage
	}
	var refs []meta.BlockRef
	more := false
	err := api.WalkBlocks(ctx, func(ino meta.Ino, idx uint64, hs block.Hash) error {
		if ino < afterIno || ino == afterIno && idx <= afterIndex {
			return nil
		}
		if len(refs) == limit {
			more = true
			return errPageFull
		}
		refs = append(refs, meta.BlockRef{Ino: ino, Index: idx, Hash: hs})
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, false, err
	}
	return refs, more, nil
}

// SetServerState serves meta.API.SetServerState.
func (h *handler) SetServerState(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Map, err = h.on(a).SetServerState(ctx, a.Name, string(a.Value))
		return err
	})
}

// SetReplicas serves meta.API.SetReplicas.
func (h *handler) SetReplicas(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Map, err = h.on(a).SetReplicas(ctx, int(a.Count))
		return err
	})
}

// Decompose serves meta.API.Decompose.
func (h *handler) Decompose(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error {
		return h.on(a).Decompose(ctx, a.Hash)
	})
}

// MoverProgress serves meta.API.MoverProgress.
func (h *handler) MoverProgress(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Progress, err = h.on(a).MoverProgress(ctx)
		return err
	})
}

// on returns the API a call runs against: bound to the call's session when
// it names one and the API can bind.
func (h *handler) on(a *Args) meta.API {
	if a.Session != 0 {
		if b, ok := h.api.(meta.SessionBinder); ok {
			return b.WithSession(a.Session)
		}
	}
	return h.api
}

// OpenSession serves meta.API.OpenSession.
func (h *handler) OpenSession(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Session, err = h.api.OpenSession(ctx)
		return err
	})
}

// Callbacks serves meta.API.Callbacks.
func (h *handler) Callbacks(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) (err error) {
		r.Callbacks, err = h.api.Callbacks(ctx, a.Session, a.Ack, time.Duration(a.Wait))
		return err
	})
}

// CloseSession serves meta.API.CloseSession.
func (h *handler) CloseSession(a *Args, r *Reply) error {
	return h.do(a, r, func(ctx context.Context) error { return h.api.CloseSession(ctx, a.Session) })
}
