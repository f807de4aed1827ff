package main

// capfsops report: the tables of bench/capfs.sh from its TSV files.
//
//	capfsops report -rows rows.tsv -contend contend.tsv [-policies policies.txt] [-base relaxed]
//
// Figure 7: per operation and layout, median MiB/s over runs per (preset,
// clients) and request size, with daemon CPU-seconds per GiB moved. Table 1:
// per preset, the bandwidth relative to the base preset (geometric mean over
// request sizes and client counts of the ratios of medians), and the
// contention loop's ops/s, commits retried and conflicts per second.

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// table is a TSV file with a header line.
type table struct {
	col  map[string]int
	rows [][]string
}

func readTable(path string) (table, error) {
	f, err := os.Open(path)
	if err != nil {
		return table{}, err
	}
	defer f.Close()
	t := table{col: map[string]int{}}
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		fields := strings.Split(sc.Text(), "\t")
		if first {
			for i, h := range fields {
				t.col[h] = i
			}
			continue
		}
		t.rows = append(t.rows, fields)
	}
	return t, sc.Err()
}

func (t table) get(row []string, name string) string {
	i, ok := t.col[name]
	if !ok || i >= len(row) {
		return ""
	}
	return row[i]
}

// num parses a field; NaN when it is not a number.
func (t table) num(row []string, name string) float64 {
	v, err := strconv.ParseFloat(t.get(row, name), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func median(v []float64) float64 {
	v = slices.DeleteFunc(slices.Clone(v), math.IsNaN)
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// geomean of the finite positive values; NaN when there are none.
func geomean(v []float64) (float64, int) {
	s, n := 0.0, 0
	for _, x := range v {
		if x > 0 && !math.IsInf(x, 0) {
			s += math.Log(x)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return math.Exp(s / float64(n)), n
}

func fmtNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func humanSize(b int) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return strconv.Itoa(b)
}

// cellKey names one measurement point; runs of it are collected together.
type cellKey struct {
	op, layout, preset string
	clients, bs        int
}

// cell is every run of one point.
type cell struct {
	mibs, cpu, mib []float64
	io             []float64 // MiB the block servers took in (write) or sent (read)
	capped, errs   bool
	bad            float64
}

type report struct {
	presets []string // in the order of the rows
	clients []int
	sizes   []int
	cells   map[cellKey]*cell
	cont    table
	knobs   map[string]string
	base    string
}

func runReport(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ExitOnError)
	rowsPath := fs.String("rows", "", "rows.tsv of bench/capfs.sh")
	contPath := fs.String("contend", "", "contend.tsv of bench/capfs.sh")
	polPath := fs.String("policies", "", "output of tessera policy list (optional)")
	base := fs.String("base", "relaxed", "the preset the others are compared with")
	_ = fs.Parse(args)
	rows, err := readTable(*rowsPath)
	if err != nil {
		return err
	}
	r := report{cells: map[cellKey]*cell{}, knobs: map[string]string{}, base: *base}
	if *contPath != "" {
		if r.cont, err = readTable(*contPath); err != nil {
			return err
		}
	}
	if *polPath != "" {
		if b, err := os.ReadFile(*polPath); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) > 1 {
					r.knobs[f[0]] = strings.Join(f[1:], " ")
				}
			}
		}
	}
	for _, row := range rows.rows {
		n, _ := strconv.Atoi(rows.get(row, "clients"))
		bs, _ := strconv.Atoi(rows.get(row, "bs"))
		k := cellKey{rows.get(row, "op"), rows.get(row, "layout"), rows.get(row, "preset"), n, bs}
		if !slices.Contains(r.presets, k.preset) {
			r.presets = append(r.presets, k.preset)
		}
		if !slices.Contains(r.clients, n) {
			r.clients = append(r.clients, n)
		}
		if !slices.Contains(r.sizes, bs) {
			r.sizes = append(r.sizes, bs)
		}
		c := r.cells[k]
		if c == nil {
			c = &cell{}
			r.cells[k] = c
		}
		mibs := rows.num(row, "MiB_s")
		secs := rows.num(row, "secs")
		c.mibs = append(c.mibs, mibs)
		c.mib = append(c.mib, mibs*secs)
		c.cpu = append(c.cpu, rows.num(row, "mount_cpu_s")+rows.num(row, "meta_cpu_s")+rows.num(row, "blockd_cpu_s"))
		ioCol := "blockd_rchar_MiB" // a write: bytes read from sockets by the block servers
		if k.op == "read" {
			ioCol = "blockd_wchar_MiB" // a read: bytes written to sockets
		}
		c.io = append(c.io, rows.num(row, ioCol))
		c.capped = c.capped || rows.get(row, "capped") == "1"
		c.errs = c.errs || (rows.get(row, "errors") != "0" && rows.get(row, "errors") != "")
		if b := rows.num(row, "bad_reqs"); b > 0 {
			c.bad += b
		}
	}
	slices.Sort(r.clients)
	slices.Sort(r.sizes)
	r.figure7(out)
	if _, ok := rows.col["blockd_rchar_MiB"]; ok {
		r.amplification(out)
	}
	r.table1(out)
	return nil
}

// bw is the median MiB/s of a point, NaN when it was not measured.
func (r report) bw(k cellKey) float64 {
	c := r.cells[k]
	if c == nil {
		return math.NaN()
	}
	return median(c.mibs)
}

func (r report) figure7(out io.Writer) {
	fmt.Fprintln(out, "Figure 7 (CAPFS §4.1) on Tessera: aggregate MiB/s, median over runs, by request size.")
	fmt.Fprintln(out, "  * = a client hit the time cap (bandwidth of what was done), ! = an I/O error (see the log),")
	fmt.Fprintln(out, "  ~N = the read found N requests without their writer's stamp: lost to forced commits (last writer wins whole blocks),")
	fmt.Fprintln(out, "       never written (* or !), or, under conflict=retry, a block one client wrote in more pieces between commits")
	fmt.Fprintln(out, "       than it tracks (maxSpans in internal/client/ranges.go): its redo then takes its whole block, zeros included;")
	fmt.Fprintln(out, "  cpu/GiB = CPU-seconds of all daemons (mounts + meta + blockds) per GiB moved, over all sizes of the row.")
	for _, op := range []string{"write", "read"} {
		for _, lay := range []string{"separate", "shared"} {
			fmt.Fprintf(out, "\n%s, %s file%s\n", op, lay, map[string]string{"separate": "s", "shared": ""}[lay])
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprint(tw, "preset\tclients\t")
			for _, bs := range r.sizes {
				fmt.Fprintf(tw, "%s\t", humanSize(bs))
			}
			fmt.Fprint(tw, "cpu/GiB\t\n")
			for _, p := range r.presets {
				for _, n := range r.clients {
					fmt.Fprintf(tw, "%s\t%d\t", p, n)
					var cpu, mib float64
					for _, bs := range r.sizes {
						c := r.cells[cellKey{op, lay, p, n, bs}]
						if c == nil {
							fmt.Fprint(tw, "-\t")
							continue
						}
						s := fmtNum(median(c.mibs), 1)
						if c.capped {
							s += "*"
						}
						if c.errs {
							s += "!"
						}
						if c.bad > 0 {
							s += fmt.Sprintf("~%.0f", c.bad)
						}
						fmt.Fprintf(tw, "%s\t", s)
						for i := range c.cpu {
							if !math.IsNaN(c.cpu[i]) && !math.IsNaN(c.mib[i]) {
								cpu += c.cpu[i]
								mib += c.mib[i]
							}
						}
					}
					fmt.Fprintf(tw, "%s\t\n", fmtNum(cpu/(mib/1024), 1))
				}
			}
			tw.Flush()
		}
	}
}

// amplification prints the block servers' traffic per byte the clients
// moved: a write of part of a block uploads the whole new block.
func (r report) amplification(out io.Writer) {
	fmt.Fprintln(out, "\nBlock-server traffic per byte moved by the clients: blockd rchar (writes: bytes taken in, sockets and any")
	fmt.Fprintln(out, "  block-file reads) or wchar (reads: bytes sent, and any file writes) from /proc/PID/io over the MiB the clients")
	fmt.Fprintln(out, "  wrote or read; 1 = each byte crossed once; a commit of part of a 4 MiB block uploads all of it. Median over runs:")
	for _, op := range []string{"write", "read"} {
		fmt.Fprintf(out, "\n%s\n", op)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "preset\tclients\tlayout\t")
		for _, bs := range r.sizes {
			fmt.Fprintf(tw, "%s\t", humanSize(bs))
		}
		fmt.Fprint(tw, "\n")
		for _, p := range r.presets {
			for _, n := range r.clients {
				for _, lay := range []string{"separate", "shared"} {
					fmt.Fprintf(tw, "%s\t%d\t%s\t", p, n, lay)
					for _, bs := range r.sizes {
						c := r.cells[cellKey{op, lay, p, n, bs}]
						if c == nil {
							fmt.Fprint(tw, "-\t")
							continue
						}
						v := make([]float64, len(c.io))
						for i := range c.io {
							v[i] = c.io[i] / c.mib[i]
						}
						fmt.Fprintf(tw, "%s\t", fmtNum(median(v), 1))
					}
					fmt.Fprint(tw, "\n")
				}
			}
		}
		tw.Flush()
	}
}

// ratio is the geometric mean over request sizes and the given client
// counts of preset's median bandwidth over the base's.
func (r report) ratio(op, lay, p string, clients []int) (float64, int) {
	var v []float64
	for _, n := range clients {
		for _, bs := range r.sizes {
			v = append(v, r.bw(cellKey{op, lay, p, n, bs})/r.bw(cellKey{op, lay, r.base, n, bs}))
		}
	}
	return geomean(v)
}

// contention returns the median ops/s, retries/s, conflicts/s and the failed
// commits (summed over runs) of preset at n clients.
func (r report) contention(p string, n int) (ops, retr, conf, failed float64) {
	var o, rt, cf []float64
	failed = math.NaN()
	for _, row := range r.cont.rows {
		if r.cont.get(row, "preset") != p || r.cont.get(row, "clients") != strconv.Itoa(n) {
			continue
		}
		o = append(o, r.cont.num(row, "ops_s"))
		rt = append(rt, r.cont.num(row, "retries_s"))
		cf = append(cf, r.cont.num(row, "conflicts_s"))
		if f := r.cont.num(row, "commits_failed"); !math.IsNaN(f) {
			if math.IsNaN(failed) {
				failed = 0
			}
			failed += f
		}
	}
	return median(o), median(rt), median(cf), failed
}

func (r report) table1(out io.Writer) {
	if len(r.clients) == 0 {
		return
	}
	nmax := r.clients[len(r.clients)-1]
	fmt.Fprintf(out, "\nTable 1 (CAPFS §4) on Tessera: cost of each preset relative to %q (ratio of bandwidths, >1 = faster;\n", r.base)
	fmt.Fprintln(out, "  geometric mean over request sizes and client counts of ratios of medians), and the contention loop")
	fmt.Fprintf(out, "  (pwrite+fsync of one small range per client, all in one block) at %d clients: ops/s, its ratio, commits\n", nmax)
	fmt.Fprintln(out, "  retried (redo) and conflicts per second, commits failed with EIO (summed over runs).")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "preset\twrite sep\twrite shared\tread sep\tread shared\tcontend ops/s\tratio\tretries/s\tconflicts/s\tfailed\t\n")
	bops, _, _, _ := r.contention(r.base, nmax)
	for _, p := range r.presets {
		fmt.Fprintf(tw, "%s\t", p)
		for _, op := range []string{"write", "read"} {
			for _, lay := range []string{"separate", "shared"} {
				g, _ := r.ratio(op, lay, p, r.clients)
				fmt.Fprintf(tw, "%s\t", fmtNum(g, 2))
			}
		}
		ops, retr, conf, failed := r.contention(p, nmax)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", fmtNum(ops, 0), fmtNum(ops/bops, 2), fmtNum(retr, 1), fmtNum(conf, 1), fmtNum(failed, 0))
	}
	tw.Flush()
	for _, p := range r.presets {
		if k := r.knobs[p]; k != "" {
			fmt.Fprintf(out, "  %-12s %s\n", p, k)
		}
	}
	fmt.Fprintf(out, "\nRatio to %q by client count (geometric mean over request sizes):\n", r.base)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "preset\t")
	for _, op := range []string{"W", "R"} {
		for _, lay := range []string{"sep", "shr"} {
			for _, n := range r.clients {
				fmt.Fprintf(tw, "%s-%s N=%d\t", op, lay, n)
			}
		}
	}
	fmt.Fprint(tw, "\n")
	for _, p := range r.presets {
		fmt.Fprintf(tw, "%s\t", p)
		for _, op := range []string{"write", "read"} {
			for _, lay := range []string{"separate", "shared"} {
				for _, n := range r.clients {
					g, _ := r.ratio(op, lay, p, []int{n})
					fmt.Fprintf(tw, "%s\t", fmtNum(g, 2))
				}
			}
		}
		fmt.Fprint(tw, "\n")
	}
	tw.Flush()
	fmt.Fprintln(out, "\nContention by client count: ops/s (retries/s):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "preset\t")
	for _, n := range r.clients {
		fmt.Fprintf(tw, "N=%d\t", n)
	}
	fmt.Fprint(tw, "\n")
	for _, p := range r.presets {
		fmt.Fprintf(tw, "%s\t", p)
		for _, n := range r.clients {
			ops, retr, _, _ := r.contention(p, n)
			fmt.Fprintf(tw, "%s (%s)\t", fmtNum(ops, 0), fmtNum(retr, 1))
		}
		fmt.Fprint(tw, "\n")
	}
	tw.Flush()
}
