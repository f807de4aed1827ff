// Package metricstest scrapes a /metrics endpoint the way Prometheus does,
// for tests: over HTTP, asking for the text format, parsed with the
// Prometheus text parser (expfmt), so that a series the parser rejects
// fails the test that scrapes it.
package metricstest

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs http://addr/metrics in the text exposition format and parses
// it.
func Scrape(ctx context.Context, addr string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, fmt.Errorf("scrape %s: %s: %s", addr, resp.Status, b)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return nil, fmt.Errorf("scrape %s: content type %q, want text/plain", addr, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: the Prometheus text parser: %w", addr, err)
	}
	return Families(fams), nil
}

// Value sums the series of family name whose labels include the given
// name/value pairs: a counter's, gauge's or untyped value, a histogram's
// sample count. ok is false when no series matches.
func (f Families) Value(name string, labels ...string) (v float64, ok bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		ok = true
		switch {
		case m.GetCounter() != nil:
			v += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v += m.GetGauge().GetValue()
		case m.GetUntyped() != nil:
			v += m.GetUntyped().GetValue()
		case m.GetHistogram() != nil:
			v += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return v, ok
}

func hasLabels(m *dto.Metric, kv []string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
