package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tessera/test/cluster"
)

// TestGlobalNamespace (issue 13 items 6 and 7): a cluster named "lab"
// (meta --cluster lab --site s1, block servers in sites s1 and s2) is
// mounted as lab:/proj (--meta ADDR, whose process must answer as lab):
// the mount shows /proj as its root, and what it writes lands in /proj. A
// mount and a block server given the list dead,live use the live one. tessera status --meta
// lab finds the metas in a clusters file whose first address answers
// nothing, and shows the cluster, both metas with their state and sites,
// and the servers per site, plain and --json. A source naming another
// cluster than the process answering is refused naming both, and so are a
// missing directory and a file as the root.
func TestGlobalNamespace(t *testing.T) {
	m := startMultiOpts(t, cluster.MultiOptions{BlockServers: 2,
		MetaArgs:   []string{"--cluster", "lab", "--site", "s1", "--replicas", "1"},
		ServerArgs: func(i int) []string { return []string{"--site", fmt.Sprintf("s%d", min(i, 1)+1)} }, // b0 in s1, the rest in s2
	})
	root := addMount(t, m)
	must(t, os.MkdirAll(filepath.Join(root.Mount(), "proj", "a"), 0o755))
	writeFile(t, filepath.Join(root.Mount(), "proj", "a", "f"), []byte("inside"))
	writeFile(t, filepath.Join(root.Mount(), "outside"), []byte("outside"))

	dead := "127.0.0.1:1" // nothing listens on port 1
	clusters := filepath.Join(t.TempDir(), "clusters")
	writeFile(t, clusters, []byte(fmt.Sprintf("# test clusters\nlab %s@s9 %s@s1\nother %s\n", dead, m.MetaAddr(), m.MetaAddr())))

	// The harness passes --meta ADDR; the source's name is checked
	// against it. A mount by name alone goes through the file below.
	sub, err := m.AddMountOf("lab:/proj", "--clusters", clusters)
	if err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(sub.Mount(), "a", "f"), []byte("inside"))
	if _, err := os.Stat(filepath.Join(sub.Mount(), "outside")); !os.IsNotExist(err) {
		t.Errorf("a name outside /proj seen through lab:/proj: %v", err)
	}
	writeFile(t, filepath.Join(sub.Mount(), "new"), []byte("from the subtree mount"))
	wantContent(t, filepath.Join(root.Mount(), "proj", "new"), []byte("from the subtree mount"))

	// A list whose first address is dead: the mount uses the live one.
	// (The harness's --meta ADDR comes first; the later flag wins.)
	listed, err := m.AddMount("--meta", dead+","+m.MetaAddr())
	if err != nil {
		t.Fatal(err)
	}
	wantContent(t, filepath.Join(listed.Mount(), "proj", "new"), []byte("from the subtree mount"))
	if got := listed.Field("meta"); got != m.MetaAddr() {
		t.Errorf("the mount's ready line names meta=%s, want the live %s", got, m.MetaAddr())
	}
	// So does a block server (b2, site s2), which registers through it.
	if _, err := m.AddServer("--meta", dead+","+m.MetaAddr()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Status by the cluster's name only, from the clusters file (the dead
	// address first): both metas listed, the live one in use.
	byName := filepath.Join(t.TempDir(), "byname")
	must(t, os.Mkdir(byName, 0o755))
	res, err := cluster.RunBin(ctx, m.Opts().Bin, slices.Concat([]string{"status", "--meta", "lab", "--clusters", clusters}, m.TLSArgs("admin"))...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("status --meta lab: exit %d, %v: %s%s", res.ExitCode, err, res.Stdout, res.Stderr)
	}
	for _, want := range []string{
		"cluster: lab\n",
		"meta " + m.MetaAddr() + ": site=s1 ",
		"state=in use\n",
		"meta " + dead + ": site=- rtt=- state=unreachable: ",
		"site s1: servers=1 up=1 draining=0 down=0 metas=1 under_replicated=0 under_bytes=0 lag=-\n",
		"site s2: servers=2 up=2 draining=0 down=0 metas=0 under_replicated=0 under_bytes=0 lag=-\n",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, res.Stdout)
		}
	}
	st, err := m.Status(ctx) // the harness's parser still reads it
	if err != nil || st.Servers != 3 || st.ServersUp != 3 {
		t.Errorf("status parsed: %+v, %v", st, err)
	}

	res, err = m.Run(ctx, "status", "--json")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("status --json: exit %d, %v: %s", res.ExitCode, err, res.Stderr)
	}
	var js struct {
		Cluster struct {
			Name  string `json:"name"`
			Metas []struct {
				Addr, Site string
				InUse      bool `json:"in_use"`
			} `json:"metas"`
		} `json:"cluster"`
		Sites []struct {
			Name    string `json:"name"`
			Servers int    `json:"servers"`
		} `json:"sites"`
		Servers []struct {
			ID, Site string
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, res.Stdout)
	}
	if js.Cluster.Name != "lab" || len(js.Cluster.Metas) != 1 || js.Cluster.Metas[0].Site != "s1" || !js.Cluster.Metas[0].InUse ||
		len(js.Sites) != 2 || js.Sites[0].Name != "s1" || js.Sites[1].Servers != 2 || len(js.Servers) != 3 {
		t.Errorf("status --json: %+v\n%s", js, res.Stdout)
	}

	// A source naming another cluster than the meta's is refused.
	res, err = cluster.RunBin(ctx, m.Opts().Bin, slices.Concat([]string{"mount", "--clusters", clusters}, m.TLSArgs("mount"), []string{"other:/", byName})...)
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, `belongs to cluster "lab", not "other"`) {
		t.Errorf("mount of other:/ served by lab's meta: exit %d, %v: %s", res.ExitCode, err, res.Stderr)
	}
	// A source naming a directory that is not there, or a file.
	for _, src := range []string{"lab:/nope", "lab:/outside"} {
		res, err = cluster.RunBin(ctx, m.Opts().Bin, slices.Concat([]string{"mount", "--clusters", clusters}, m.TLSArgs("mount"), []string{src, byName})...)
		if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "mount root") {
			t.Errorf("mount of %s: exit %d, %v: %s", src, res.ExitCode, err, res.Stderr)
		}
	}
}
