package metrics

import "github.com/prometheus/client_golang/prometheus"

// family is one series a collector reads from existing counters: its
// description, its type and, for labelled ones, how to read each value.
type family struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

func counter(name, help string, labels ...string) family {
	return family{prometheus.NewDesc(name, help, labels, nil), prometheus.CounterValue}
}

func gauge(name, help string, labels ...string) family {
	return family{prometheus.NewDesc(name, help, labels, nil), prometheus.GaugeValue}
}

// emit sends f's value (with label values lv).
func (f family) emit(ch chan<- prometheus.Metric, v float64, lv ...string) {
	ch <- prometheus.MustNewConstMetric(f.desc, f.typ, v, lv...)
}

// fail reports that f could not be read this scrape (the scrape goes on;
// the handler logs it).
func (f family) fail(ch chan<- prometheus.Metric, err error) {
	ch <- prometheus.NewInvalidMetric(f.desc, err)
}

// describeAll sends the descriptions of fs.
func describeAll(ch chan<- *prometheus.Desc, fs ...family) {
	for _, f := range fs {
		ch <- f.desc
	}
}
