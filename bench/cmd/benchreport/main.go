// Command benchreport is the number-crunching half of bench/run.sh.
//
//	benchreport proc PID          print "cpu_s hwm_kib nprocs max_hwm_kib" for PID and its live descendants
//	benchreport io PID            print "rchar wchar read_bytes write_bytes cancelled_write_bytes" summed over PID's tree
//	benchreport fio FILE          print "bw_MiBps iops runtime_s" from a fio --output-format=json file
//	benchreport report -dir DIR [-json OUT] [-md OUT.md]
//	                              summarise DIR/samples.tsv, DIR/targets.tsv and DIR/meta.tsv:
//	                              print a table (median [min-max] per target, ratios) and write OUT as JSON
//
// samples.tsv: target workload run value unit daemon_cpu_s wall_s status note [ops]
//
//	(ops: operations the measurement did, for daemon CPU per 1,000 of them)
//
// targets.tsv: target status reason peak_rss_kib cpu_total_s version nprocs max_hwm_kib
// meta.tsv:    key value
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"tessera/bench/internal/proctree"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "fio":
		if len(os.Args) != 3 {
			usage()
		}
		if err := fioCmd(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport fio:", err)
			os.Exit(1)
		}
	case "proc":
		// benchreport proc PID: "cpu_s hwm_kib nprocs max_hwm_kib" for PID's process tree.
		if len(os.Args) != 3 {
			usage()
		}
		pid, err := strconv.Atoi(os.Args[2])
		if err != nil {
			usage()
		}
		s, err := proctree.Read(pid)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchreport proc:", err)
			os.Exit(1)
		}
		fmt.Printf("%.2f %d %d %d\n", s.CPUSeconds, s.HWMKiB, s.Procs, s.MaxHWMKiB)
	case "io":
		// benchreport io PID: /proc/PID/io summed over PID's process tree.
		if len(os.Args) != 3 {
			usage()
		}
		pid, err := strconv.Atoi(os.Args[2])
		if err != nil {
			usage()
		}
		s, err := proctree.ReadIO(pid)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchreport io:", err)
			os.Exit(1)
		}
		fmt.Printf("%d %d %d %d %d\n", s.RChar, s.WChar, s.ReadBytes, s.WriteBytes, s.CancelledWriteBytes)
	case "report":
		fs := flag.NewFlagSet("report", flag.ExitOnError)
		dir := fs.String("dir", "", "directory holding samples.tsv, targets.tsv, meta.tsv")
		out := fs.String("json", "", "write the JSON summary here")
		md := fs.String("md", "", "also write the report as markdown here")
		_ = fs.Parse(os.Args[2:])
		if *dir == "" {
			usage()
		}
		if err := reportCmd(*dir, *out, *md); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport report:", err)
			os.Exit(1)
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchreport fio FILE | benchreport proc PID | benchreport io PID | benchreport report -dir DIR [-json OUT]")
	os.Exit(2)
}

// ---- fio ----

type fioDir struct {
	IOBytes int64   `json:"io_bytes"`
	BWBytes float64 `json:"bw_bytes"`
	IOPS    float64 `json:"iops"`
	Runtime float64 `json:"runtime"` // ms
}

type fioOut struct {
	Jobs []struct {
		Error int    `json:"error"`
		Read  fioDir `json:"read"`
		Write fioDir `json:"write"`
	} `json:"jobs"`
}

func fioCmd(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// fio may print notes before the JSON document.
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	var o fioOut
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(o.Jobs) == 0 {
		return fmt.Errorf("%s: no jobs", path)
	}
	var bw, iops, rt float64
	var n int64
	for _, j := range o.Jobs {
		if j.Error != 0 {
			return fmt.Errorf("%s: fio job error %d", path, j.Error)
		}
		for _, d := range []fioDir{j.Read, j.Write} {
			if d.IOBytes > 0 {
				bw += d.BWBytes
				iops += d.IOPS
				rt = math.Max(rt, d.Runtime/1000)
				n += d.IOBytes
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("%s: no I/O done", path)
	}
	fmt.Printf("%.3f %.1f %.3f\n", bw/(1<<20), iops, rt)
	return nil
}

// ---- report ----

// workload: lower marks figures where less is better (seconds, bytes per
// byte); their ratios are inverted so that >1 always means Tessera better.
type workload struct {
	key, label, unit string
	lower            bool
}

var workloads = []workload{
	{"seqwrite", "seq write 1MiB +fsync", "MiB/s", false},
	{"seqread", "seq read 1MiB, cold", "MiB/s", false},
	{"randread", "rand read 4KiB, cold, 1 job", "IOPS", false},
	{"randread4", "rand read 4KiB, cold, 4 jobs", "IOPS", false},
	{"create", "create empty files (N workers)", "ops/s", false},
	{"stat", "stat files (N workers)", "ops/s", false},
	{"unlink", "unlink files (N workers)", "ops/s", false},
	{"untar", "untar source tree", "s", true},
	{"statall", "stat every entry (find -ls)", "s", true},
	{"tardiff", "stat+compare every entry (tar -d)", "s", true},
	{"rmtree", "rm -rf untarred tree", "s", true},
	{"clone", "git clone --no-local", "s", true},
	{"gitstatus", "git status in the clone", "s", true},
	{"sqlite_wal", "SQLite WAL, 2 procs (session)", "tx/s", false},
	{"sqlite_rollback", "SQLite rollback journal (session)", "tx/s", false},
	{"sqlite_wal_posix", "SQLite WAL, 2 procs (posix)", "tx/s", false},
	{"sqlite_rollback_posix", "SQLite rollback journal (posix)", "tx/s", false},
	{"ow_rate", "64KiB overwrite+fsync", "ops/s", false},
	{"ow_sent", "  sent to the store / byte overwr.", "B/B", true},
	{"ow_wchar", "  daemon write() bytes / byte overwr.", "B/B", true},
	{"ow_stored", "  store bytes after / live byte", "B/B", true},
	{"ow_settled", "  the same after --ow-settle", "B/B", true},
}

// juicefsNote goes next to JuiceFS's figures wherever they are printed.
const juicefsNote = "JuiceFS's local file store does not fsync its block files: its write and fsync figures are not durable ones"

var targetOrder = []string{"passthrough", "userloop", "juicefs", "tessera"}

var abbr = map[string]string{"passthrough": "P", "userloop": "U", "juicefs": "J", "tessera": "T"}

type pair struct{ a, b string }

func (p pair) label() string { return abbr[p.a] + "/" + abbr[p.b] }

// ratioPairs: Tessera against JuiceFS and passthrough always (n/a when absent),
// against userloop when it was run, and JuiceFS against the FUSE floors.
func ratioPairs(names []string) []pair {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	ps := []pair{{"tessera", "juicefs"}, {"tessera", "passthrough"}}
	if has["userloop"] {
		ps = append(ps, pair{"tessera", "userloop"})
	}
	if has["juicefs"] && has["passthrough"] {
		ps = append(ps, pair{"juicefs", "passthrough"})
	}
	if has["juicefs"] && has["userloop"] {
		ps = append(ps, pair{"juicefs", "userloop"})
	}
	return ps
}

type stats struct {
	N      int       `json:"n"`
	Errors int       `json:"errors"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Values []float64 `json:"values"`
	CPU    float64   `json:"daemon_cpu_s_median"`
	CPUs   []float64 `json:"daemon_cpu_s"`
	// CPUPer1k: median daemon CPU seconds per 1,000 operations, for
	// measurements that name their operation count
	CPUPer1k  float64   `json:"daemon_cpu_s_per_1000_ops_median"`
	CPUPer1ks []float64 `json:"daemon_cpu_s_per_1000_ops"`
}

type target struct {
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Reason     string  `json:"reason,omitempty"`
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	CPUTotalS  float64 `json:"daemon_cpu_total_s"`
	Version    string  `json:"version,omitempty"`
	Procs      int     `json:"daemon_procs"`
	MaxHWMKiB  int64   `json:"peak_rss_largest_proc_kib"`
}

type sample struct {
	Target, Workload string
	Run              int
	Value            float64
	Unit             string
	CPU, Wall        float64
	Status, Note     string
	Ops              float64 // operations done; NaN when not counted
}

func readTSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Split(line, "\t"))
	}
	return rows, sc.Err()
}

func atof(s string) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func col(r []string, i int) string {
	if i < len(r) {
		return r[i]
	}
	return ""
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func reportCmd(dir, out, md string) error {
	metaRows, err := readTSV(filepath.Join(dir, "meta.tsv"))
	if err != nil {
		return err
	}
	meta := map[string]string{}
	var metaKeys []string
	for _, r := range metaRows {
		if _, ok := meta[r[0]]; !ok {
			metaKeys = append(metaKeys, r[0])
		}
		meta[r[0]] = col(r, 1)
	}
	tRows, err := readTSV(filepath.Join(dir, "targets.tsv"))
	if err != nil {
		return err
	}
	targets := map[string]*target{}
	var names []string
	for _, r := range tRows {
		t := &target{Name: r[0], Status: col(r, 1), Reason: col(r, 2), Version: col(r, 5)}
		t.PeakRSSKiB, _ = strconv.ParseInt(col(r, 3), 10, 64)
		t.Procs, _ = strconv.Atoi(col(r, 6))
		t.MaxHWMKiB, _ = strconv.ParseInt(col(r, 7), 10, 64)
		t.CPUTotalS = atof(col(r, 4))
		if math.IsNaN(t.CPUTotalS) {
			t.CPUTotalS = 0
		}
		if _, ok := targets[t.Name]; !ok {
			names = append(names, t.Name)
		}
		targets[t.Name] = t
	}
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })

	sRows, err := readTSV(filepath.Join(dir, "samples.tsv"))
	if err != nil {
		return err
	}
	// results[workload][target]
	results := map[string]map[string]*stats{}
	var samples []sample
	for _, r := range sRows {
		run, _ := strconv.Atoi(col(r, 2))
		s := sample{Target: r[0], Workload: col(r, 1), Run: run, Value: atof(col(r, 3)), Unit: col(r, 4),
			CPU: atof(col(r, 5)), Wall: atof(col(r, 6)), Status: col(r, 7), Note: col(r, 8), Ops: atof(col(r, 9))}
		samples = append(samples, s)
		if results[s.Workload] == nil {
			results[s.Workload] = map[string]*stats{}
		}
		st := results[s.Workload][s.Target]
		if st == nil {
			st = &stats{}
			results[s.Workload][s.Target] = st
		}
		if s.Status != "ok" || math.IsNaN(s.Value) {
			st.Errors++
			continue
		}
		st.Values = append(st.Values, s.Value)
		if !math.IsNaN(s.CPU) {
			st.CPUs = append(st.CPUs, s.CPU)
			if s.Ops > 0 {
				st.CPUPer1ks = append(st.CPUPer1ks, s.CPU*1000/s.Ops)
			}
		}
	}
	for _, m := range results {
		for _, st := range m {
			st.N = len(st.Values)
			if st.N > 0 {
				st.Median = median(st.Values)
				st.Min, st.Max = st.Values[0], st.Values[0]
				for _, v := range st.Values {
					st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
				}
			}
			st.CPU = median(st.CPUs)
			st.CPUPer1k = median(st.CPUPer1ks)
		}
	}

	// ---- print ----
	pairs := ratioPairs(names)
	var errs []string
	for _, s := range samples {
		if s.Status != "ok" {
			errs = append(errs, fmt.Sprintf("%s %s run %d: %s %s", s.Target, s.Workload, s.Run, s.Status, s.Note))
		}
	}
	doc := reportDoc{meta: meta, metaKeys: metaKeys, names: names, targets: targets, results: results, pairs: pairs, errs: errs}
	doc.text(os.Stdout)
	if md != "" {
		f, err := os.Create(md)
		if err != nil {
			return err
		}
		doc.markdown(f)
		if err := f.Close(); err != nil {
			return err
		}
	}

	if out != "" {
		type sampleJ struct {
			Target   string   `json:"target"`
			Workload string   `json:"workload"`
			Run      int      `json:"run"`
			Value    *float64 `json:"value"`
			Unit     string   `json:"unit"`
			CPU      *float64 `json:"daemon_cpu_s"`
			Wall     *float64 `json:"wall_s"`
			Status   string   `json:"status"`
			Note     string   `json:"note,omitempty"`
			Ops      *float64 `json:"ops,omitempty"`
		}
		num := func(v float64) *float64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
			return &v
		}
		var sj []sampleJ
		for _, s := range samples {
			sj = append(sj, sampleJ{s.Target, s.Workload, s.Run, num(s.Value), s.Unit, num(s.CPU), num(s.Wall), s.Status, s.Note, num(s.Ops)})
		}
		type wlJ struct {
			Key     string              `json:"key"`
			Label   string              `json:"label"`
			Unit    string              `json:"unit"`
			Lower   bool                `json:"lower_is_better"`
			Targets map[string]*stats   `json:"targets"`
			Ratios  map[string]*float64 `json:"ratios"`
		}
		var wj []wlJ
		for _, wl := range workloads {
			m := results[wl.key]
			if m == nil {
				m = map[string]*stats{}
			}
			rs := map[string]*float64{}
			for _, p := range pairs {
				rs[p.a+"/"+p.b] = num(ratioF(m, p.a, p.b, wl.lower))
			}
			wj = append(wj, wlJ{wl.key, strings.TrimSpace(wl.label), wl.unit, wl.lower, m, rs})
		}
		var tj []*target
		for _, n := range names {
			tj = append(tj, targets[n])
		}
		doc := map[string]any{"meta": meta, "targets": tj, "workloads": wj, "samples": sj, "notes": map[string]string{"juicefs": juicefsNote}}
		// NaN-free copies of stats: replace NaN CPU medians.
		for _, m := range results {
			for _, st := range m {
				if math.IsNaN(st.CPU) {
					st.CPU = 0
				}
				if math.IsNaN(st.CPUPer1k) {
					st.CPUPer1k = 0
				}
			}
		}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func rank(n string) int {
	for i, t := range targetOrder {
		if t == n {
			return i
		}
	}
	return len(targetOrder)
}

func cell(t *target, st *stats) string {
	if t == nil || t.Status != "ok" {
		return "unavailable"
	}
	if st == nil || st.N == 0 {
		if st != nil && st.Errors > 0 {
			return "failed"
		}
		return "-"
	}
	s := fmt.Sprintf("%s [%s-%s]", num(st.Median), num(st.Min), num(st.Max))
	if st.Errors > 0 {
		s += fmt.Sprintf(" (%d err)", st.Errors)
	}
	return s
}

func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func ratioF(m map[string]*stats, a, b string, lower bool) float64 {
	sa, sb := m[a], m[b]
	if sa == nil || sb == nil || sa.N == 0 || sb.N == 0 {
		return math.NaN()
	}
	if lower {
		sa, sb = sb, sa
	}
	if sb.Median == 0 {
		return math.NaN()
	}
	return sa.Median / sb.Median
}

func ratio(m map[string]*stats, a, b string, lower bool) string {
	r := ratioF(m, a, b, lower)
	if math.IsNaN(r) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", r)
}

func cpuRatio(m map[string]*stats, a, b string, get func(*stats) float64) string {
	sa, sb := m[a], m[b]
	if sa == nil || sb == nil || math.IsNaN(get(sa)) || math.IsNaN(get(sb)) || get(sb) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", get(sa)/get(sb))
}
