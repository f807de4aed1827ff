package metrics

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"tessera/internal/block/scrub"
)

// Series is one metric series this package makes, as the generated
// reference (docs/reference/metrics.md, tessera gendocs) lists it.
type Series struct {
	Name   string
	Help   string
	Labels []string // variable labels, in the order the series takes them
}

// Catalog returns every series this package's constructors and collectors
// register, sorted by name: the enumeration docs/metrics.md is checked
// against and the reference is generated from.
func Catalog() ([]Series, error) {
	var reg capture
	NewMetaCalls(&reg, SideMeta)
	NewMetaCalls(&reg, SideClient)
	NewFUSEOps(&reg)
	NewBlockRequests(&reg)
	reg.MustRegister(&clientCollector{}, &metaCollector{}, &storeCollector{sc: scrub.New(scrub.Config{})})
	ch := make(chan *prometheus.Desc, 1000)
	go func() {
		for _, c := range reg.cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	byName := map[string]Series{}
	for d := range ch {
		s, err := seriesOf(d)
		if err != nil {
			return nil, err
		}
		byName[s.Name] = s
	}
	out := make([]Series, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Series) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// capture is a Registerer that keeps what is registered with it.
type capture struct{ cs []prometheus.Collector }

func (c *capture) Register(col prometheus.Collector) error { c.cs = append(c.cs, col); return nil }
func (c *capture) MustRegister(cols ...prometheus.Collector) {
	c.cs = append(c.cs, cols...)
}
func (c *capture) Unregister(prometheus.Collector) bool { return false }

// descFields reads a Desc's String(), the only way its name, help and
// labels are exposed: Desc{fqName: "…", help: "…", …, variableLabels: {a,b}}.
var descFields = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), .*variableLabels: \{([^}]*)\}\}$`)

func seriesOf(d *prometheus.Desc) (Series, error) {
	m := descFields.FindStringSubmatch(d.String())
	if m == nil {
		return Series{}, fmt.Errorf("metrics: cannot read the description %s", d)
	}
	name, err := strconv.Unquote(m[1])
	if err != nil {
		return Series{}, fmt.Errorf("metrics: name in %s: %w", d, err)
	}
	help, err := strconv.Unquote(m[2])
	if err != nil {
		return Series{}, fmt.Errorf("metrics: help in %s: %w", d, err)
	}
	var labels []string
	if m[3] != "" {
		labels = strings.Split(m[3], ",")
	}
	return Series{Name: name, Help: help, Labels: labels}, nil
}
