package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBashCompletion: the script parses (bash -n), names every command, and
// completes commands, subcommands and flags when bash runs it.
func TestBashCompletion(t *testing.T) {
	script, err := bashCompletion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "tessera.bash")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, c := range sortedCommands() {
		if !strings.Contains(script, " "+c+" ") && !strings.Contains(script, `"`+c+" ") && !strings.Contains(script, " "+c+`"`) {
			t.Errorf("the script does not name the command %s", c)
		}
	}
	cases := []struct {
		line string // the words before the cursor, the last one being completed
		want string // COMPREPLY, space-separated
	}{
		{"tessera ", strings.Join(sortedCommands(), " ")},
		{"tessera mo", "mount"},
		{"tessera fileset cr", "create"},
		{"tessera fileset create /mnt/t/x --ho", "--home"},
		{"tessera server dr", "drain"},
		{"tessera up --da", "--data"},
		{"tessera up --data /tmp --mou", "--mount"},
		{"tessera mount --tls-c", "--tls-ca --tls-cert"},
		{"tessera completion ", "bash"},
		{"tessera up --data ", ""}, // a value: file names, from bash's default
	}
	for _, c := range cases {
		words := strings.Split(c.line, " ")
		arr := make([]string, len(words))
		for i, w := range words {
			arr[i] = "'" + w + "'"
		}
		prog := "source " + f + "\nCOMP_WORDS=(" + strings.Join(arr, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_tessera\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command("bash", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", c.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("completing %q: %q, want %q", c.line, got, c.want)
		}
	}
}
