package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// allSeries returns the name of every series this package makes.
func allSeries(t *testing.T) []string {
	cat, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) < 20 {
		t.Fatalf("Catalog found %d series; the package makes dozens", len(cat))
	}
	var names []string
	for _, s := range cat {
		if s.Help == "" {
			t.Errorf("series %s has no help text", s.Name)
		}
		names = append(names, s.Name)
	}
	return names
}

var seriesRef = regexp.MustCompile(`tessera_[a-z_]+`)

// TestDocsListEverySeries: docs/metrics.md names every series and no
// other; the Grafana dashboard queries only series that exist.
func TestDocsListEverySeries(t *testing.T) {
	names := allSeries(t)
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/metrics.md does not list %s", n)
		}
	}
	for _, n := range seriesRef.FindAllString(string(doc), -1) {
		if !slices.Contains(names, n) {
			t.Errorf("docs/metrics.md names %s, which no code makes", n)
		}
	}

	raw, err := os.ReadFile("../../deploy/grafana/tessera.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana/tessera.json: %v", err)
	}
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			for _, n := range seriesRef.FindAllString(tg.Expr, -1) {
				base := n
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if strings.HasSuffix(n, suf) && slices.Contains(names, strings.TrimSuffix(n, suf)) {
						base = strings.TrimSuffix(n, suf)
					}
				}
				if !slices.Contains(names, base) {
					t.Errorf("dashboard panel %q queries %s, which no code makes", p.Title, n)
				}
			}
		}
	}
	if exprs == 0 {
		t.Errorf("the dashboard has no queries")
	}
}
