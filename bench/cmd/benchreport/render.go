package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// reportDoc is what `benchreport report` prints, as text or markdown.
type reportDoc struct {
	meta     map[string]string
	metaKeys []string
	names    []string
	targets  map[string]*target
	results  map[string]map[string]*stats
	pairs    []pair
	errs     []string
}

// table is a header and rows of cells.
type table struct {
	head []string
	rows [][]string
}

func (d reportDoc) throughput() table {
	t := table{head: []string{"workload", "unit"}}
	t.head = append(t.head, d.names...)
	for _, p := range d.pairs {
		t.head = append(t.head, p.label())
	}
	for _, wl := range d.workloads() {
		m := d.results[wl.key]
		if m == nil {
			continue // not measured in this run (e.g. ow_settled without --ow-settle)
		}
		row := []string{wl.label, wl.unit}
		for _, n := range d.names {
			row = append(row, cell(d.targets[n], m[n]))
		}
		for _, p := range d.pairs {
			row = append(row, ratio(m, p.a, p.b, wl.lower))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

func (d reportDoc) cpu() table { return d.cpuTable(false) }

// cpuPer1k: the daemon's CPU seconds per 1,000 operations, for the
// measurements that count theirs (tree entries, files, transactions).
func (d reportDoc) cpuPer1k() table { return d.cpuTable(true) }

func (d reportDoc) cpuTable(per1k bool) table {
	t := table{head: []string{"workload", "unit"}}
	t.head = append(t.head, d.names...)
	for _, p := range d.pairs {
		t.head = append(t.head, p.label())
	}
	for _, wl := range d.workloads() {
		if wl.key == "ow_sent" || wl.key == "ow_wchar" || wl.key == "ow_stored" || wl.key == "ow_settled" {
			continue // the same measurement as ow_rate
		}
		m := d.results[wl.key]
		if m == nil {
			continue
		}
		unit, get := "cpu-s", func(st *stats) float64 { return st.CPU }
		if per1k {
			unit, get = "cpu-s/1k ops", func(st *stats) float64 { return st.CPUPer1k }
		}
		row := []string{wl.label, unit}
		seen := false
		for _, n := range d.names {
			s := "-"
			if st := m[n]; st != nil && !math.IsNaN(get(st)) {
				s = fmt.Sprintf("%.3f", get(st))
				seen = true
			}
			row = append(row, s)
		}
		if per1k && !seen {
			continue
		}
		for _, p := range d.pairs {
			row = append(row, cpuRatio(m, p.a, p.b, get))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// totals: whole-run daemon CPU and peak RSS per target, with ratios (<1 = Tessera cheaper).
func (d reportDoc) totals() table {
	t := table{head: []string{"", "unit"}}
	t.head = append(t.head, d.names...)
	for _, p := range d.pairs {
		t.head = append(t.head, p.label())
	}
	get := map[string]func(*target) float64{
		"cpu": func(t *target) float64 { return t.CPUTotalS },
		"rss": func(t *target) float64 { return float64(t.PeakRSSKiB) / 1024 },
	}
	for _, k := range []struct{ key, label, unit, f string }{
		{"cpu", "daemon CPU, whole run", "s", "%.2f"},
		{"rss", "daemon peak RSS (VmHWM)", "MiB", "%.1f"},
	} {
		row := []string{k.label, k.unit}
		for _, n := range d.names {
			tg := d.targets[n]
			if tg.Status != "ok" {
				row = append(row, "-")
				continue
			}
			c := fmt.Sprintf(k.f, get[k.key](tg))
			if k.key == "rss" && tg.Procs > 1 {
				c += fmt.Sprintf(" (%d procs)", tg.Procs)
			}
			row = append(row, c)
		}
		for _, p := range d.pairs {
			a, b := d.targets[p.a], d.targets[p.b]
			if a == nil || b == nil || a.Status != "ok" || b.Status != "ok" || get[k.key](b) == 0 {
				row = append(row, "n/a")
				continue
			}
			row = append(row, fmt.Sprintf("%.2f", get[k.key](a)/get[k.key](b)))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// workloads: the known ones, then any other key found in the samples.
func (d reportDoc) workloads() []workload {
	out := append([]workload(nil), workloads...)
	known := map[string]bool{}
	for _, w := range workloads {
		known[w.key] = true
	}
	for k := range d.results {
		if !known[k] {
			out = append(out, workload{key: k, label: k})
		}
	}
	return out
}

func (t table) text(w io.Writer) {
	width := make([]int, len(t.head))
	for i, h := range t.head {
		width[i] = len(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString(" ")
		for i, c := range cells {
			fmt.Fprintf(&b, " %-*s", width[i], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head)
	for _, r := range t.rows {
		line(r)
	}
}

func (t table) markdown(w io.Writer) {
	fmt.Fprintln(w, "| "+strings.Join(t.head, " | ")+" |")
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
		if i >= 2 {
			sep[i] = "---:"
		}
	}
	fmt.Fprintln(w, "|"+strings.Join(sep, "|")+"|")
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "|", "\\|")
		}
		fmt.Fprintln(w, "| "+strings.Join(cells, " | ")+" |")
	}
}

func (d reportDoc) legend() string {
	s := "ratios:"
	for _, n := range d.names {
		s += fmt.Sprintf(" %s=%s", abbr[n], n)
	}
	return s
}

const ratioNote = "median [min-max] over runs; ratios are of medians, >1 = Tessera better " +
	"(for s and B/B, where less is better, the ratio is inverted: other/Tessera)"

const owNote = "overwrite rows: a fresh instance per run; per byte overwritten: bytes sent to the data store " +
	"(Tessera: growth of the block servers' stored bytes, `tessera status`, all replicas; JuiceFS: its PUT bytes to the " +
	"object store, metric juicefs_object_request_data_bytes; loopbacks: not counted, they overwrite in place), " +
	"bytes the daemon passed to write() (/proc/PID/io wchar: files, sockets, FUSE replies; passthrough ~0: the kernel " +
	"writes its backing file), and the store's bytes right after the job (caches left out) per live byte"

func (d reportDoc) text(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== Tessera benchmark ==")
	for _, k := range d.metaKeys {
		fmt.Fprintf(w, "  %-14s %s\n", k+":", d.meta[k])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Targets:")
	for _, n := range d.names {
		t := d.targets[n]
		if t.Status == "ok" {
			fmt.Fprintf(w, "  %-12s ok    %s\n", n, t.Version)
		} else {
			fmt.Fprintf(w, "  %-12s %s: %s\n", n, t.Status, t.Reason)
		}
		if n == "juicefs" {
			fmt.Fprintf(w, "  %-12s NOTE: %s\n", "", juicefsNote)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Figures: "+ratioNote)
	fmt.Fprintln(w, "  "+d.legend())
	d.throughput().text(w)
	fmt.Fprintln(w, "  ("+owNote+")")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Daemon CPU seconds per measurement (median; user+sys of the daemon's process tree; ratios <1 = Tessera cheaper)")
	d.cpu().text(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Daemon CPU seconds per 1,000 operations (entries, files or transactions; median; ratios <1 = Tessera cheaper)")
	d.cpuPer1k().text(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Daemon totals (the instance mounted for the whole run; ratios <1 = Tessera cheaper):")
	d.totals().text(w)
	if len(d.errs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Failed measurements:")
		for _, e := range d.errs {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

func (d reportDoc) markdown(w io.Writer) {
	fmt.Fprintln(w, "## Setup")
	fmt.Fprintln(w)
	for _, k := range d.metaKeys {
		v := d.meta[k]
		if k == "command" {
			v = "`" + v + "`"
		}
		fmt.Fprintf(w, "- %s: %s\n", k, v)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | version |")
	fmt.Fprintln(w, "|---|---|")
	for _, n := range d.names {
		t := d.targets[n]
		v := t.Version
		if t.Status != "ok" {
			v = t.Status + ": " + t.Reason
		}
		if n == "juicefs" {
			v += " — **" + juicefsNote + "**"
		}
		fmt.Fprintf(w, "| %s | %s |\n", n, strings.ReplaceAll(v, "|", "\\|"))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Figures")
	fmt.Fprintln(w)
	fmt.Fprintln(w, ratioNote+"; "+d.legend()+".")
	fmt.Fprintln(w)
	d.throughput().markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "JuiceFS: "+juicefsNote+". "+strings.ToUpper(owNote[:1])+owNote[1:]+".")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Daemon CPU seconds per measurement")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Median; user+sys of the daemon's process tree; ratios <1 = Tessera cheaper.")
	fmt.Fprintln(w)
	d.cpu().markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Daemon CPU seconds per 1,000 operations")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Operations: the tree's entries (untar, find -ls, tar -d, rm -rf), the clone's files (git clone, git status), files (create, stat, unlink), transactions (SQLite); median; ratios <1 = Tessera cheaper.")
	fmt.Fprintln(w)
	d.cpuPer1k().markdown(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Daemon totals")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The instance mounted for the whole run (not the fresh overwrite ones); ratios <1 = Tessera cheaper.")
	fmt.Fprintln(w)
	d.totals().markdown(w)
	if len(d.errs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "## Failed measurements")
		fmt.Fprintln(w)
		for _, e := range d.errs {
			fmt.Fprintln(w, "- "+e)
		}
	}
}
