package up

import (
	"context"
	"fmt"
	"log/slog"

	"tessera/internal/client"
	"tessera/internal/s3"
	"tessera/internal/vfs"
)

// S3Config is an S3 endpoint: `tessera s3` runs one, `tessera up --s3`
// one beside its mount.
type S3Config struct {
	// Client is the endpoint's Tessera client (with a session, as a
	// mount's).
	Client client.Config
	Server s3.ServerConfig
}

// S3Node is a running S3 endpoint.
type S3Node struct {
	Addr   string
	Client *client.Client
	v      *vfs.FS
	srv    *s3.Server
	log    *slog.Logger
}

// StartS3 starts an S3 endpoint made from cfg; Close stops it.
func StartS3(ctx context.Context, cfg S3Config) (*S3Node, error) {
	log := cfg.Client.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Client.Sessions = true
	cl, err := client.New(ctx, cfg.Client)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	v := vfs.New(cl, vfs.Options{Logger: log})
	cfg.Server.Logger = log
	srv, err := s3.Serve(ctx, v, s3.NewIAM(cl.Meta(), nil), cfg.Server)
	if err != nil {
		v.Close()
		cl.Close(context.Background())
		return nil, err
	}
	return &S3Node{Addr: srv.Addr, Client: cl, v: v, srv: srv, log: log}, nil
}

// Done reports the end of serving.
func (n *S3Node) Done() <-chan error { return n.srv.Done() }

// Close stops serving and closes the client.
func (n *S3Node) Close() error {
	err := n.srv.Close()
	n.v.Close()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := n.Client.Close(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
