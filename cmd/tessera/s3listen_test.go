package main

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestS3ListenRefused: a listen address the S3 endpoint cannot serve, port
// 0 above all (versitygw would bind a port nobody is told), is refused
// before any cluster is reached, with a usage error naming what is wrong;
// with TLS flags too, and by tessera up --s3.
func TestS3ListenRefused(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "127.0.0.1:0", "--meta", "127.0.0.1:1"}, "port 0 (any free port) is not supported"},
		{[]string{"--listen", "127.0.0.1:0", "--tls-cert", dir + "/c.pem", "--tls-key", dir + "/k.pem", "--meta", "127.0.0.1:1"}, "port 0"},
		{[]string{"--listen", "127.0.0.1", "--meta", "127.0.0.1:1"}, "want HOST:PORT"},
		{[]string{"--listen", "127.0.0.1:http", "--meta", "127.0.0.1:1"}, `port "http" is not a number`},
		{[]string{"--listen", "127.0.0.1:70000", "--meta", "127.0.0.1:1"}, `port "70000"`},
	} {
		err := runS3(context.Background(), c.args)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("s3 %q: %v; want a usage error saying %q", c.args, err, c.want)
		}
	}
	err := runUp(context.Background(), []string{"--data", dir, "--s3", "127.0.0.1:0"})
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "port 0") {
		t.Errorf("up --s3 127.0.0.1:0: %v; want a usage error about port 0", err)
	}
}
