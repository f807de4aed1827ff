package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot walks up from dir to the directory whose go.mod declares module
// tessera.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(b) == "tessera" {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module tessera above the working directory")
		}
		dir = parent
	}
}

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// Build compiles ./cmd/tessera of the repository at root into out, with
// extra `go build` flags (for example "-race"). Its error says plainly when
// the command does not exist yet.
func Build(ctx context.Context, root, out string, flags ...string) error {
	src := filepath.Join(root, "cmd", "tessera")
	matches, _ := filepath.Glob(filepath.Join(src, "*.go"))
	if len(matches) == 0 {
		return fmt.Errorf("build tessera: %s has no Go files yet: the binary these tests judge is not written", src)
	}
	args := append([]string{"build", "-o", out}, flags...)
	args = append(args, "./cmd/tessera")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, b)
	}
	return nil
}
