package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/block/scrub"
)

// captured records the collectors registered with it.
type captured struct{ cs []prometheus.Collector }

func (c *captured) Register(col prometheus.Collector) error { c.cs = append(c.cs, col); return nil }
func (c *captured) MustRegister(cols ...prometheus.Collector) {
	c.cs = append(c.cs, cols...)
}
func (c *captured) Unregister(prometheus.Collector) bool { return false }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// allSeries returns the name of every series this package makes.
func allSeries(t *testing.T) []string {
	var reg captured
	NewMetaCalls(&reg, SideMeta)
	NewMetaCalls(&reg, SideClient)
	NewFUSEOps(&reg)
	NewBlockRequests(&reg)
	reg.MustRegister(&clientCollector{}, &metaCollector{}, &storeCollector{sc: scrub.New(scrub.Config{})})
	ch := make(chan *prometheus.Desc, 1000)
	for _, c := range reg.cs {
		c.Describe(ch)
	}
	close(ch)
	var names []string
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		names = append(names, m[1])
	}
	slices.Sort(names)
	return slices.Compact(names)
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
