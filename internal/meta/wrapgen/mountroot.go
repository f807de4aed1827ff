package main

import (
	"fmt"
	"slices"
	"strings"
)

// -style mountroot (package mountroot's API, a meta.API seen from one of
// its directories) writes the method of each interface method not written
// by hand: every meta.Ino argument goes through the receiver's m (the
// swap of meta.RootIno and the mount's root), every meta.Inode result
// through mapInode and the error through e (a commit conflict's inode);
// optional interfaces' methods are made through fwd() (meta.Forward).
// A parameter or result of any other type that may carry an inode number
// (a struct not listed in rootSafe, a slice of entries, a callback) fails
// generation: that method is written by hand in package mountroot, which
// is the one place that knows which of its fields are inode numbers.

// rootSafe are the types mountroot's generated methods pass on unmapped:
// they carry no inode number.
var rootSafe = map[string]bool{"string": true, "[]byte": true, "[]string": true, "bool": true,
	"int": true, "uint32": true, "uint64": true, "int64": true, "block.Hash": true,
	"time.Duration": true, "time.Time": true, "meta.SessionID": true,
	"meta.SetAttrReq": true, "meta.Recipe": true, "meta.StatFS": true, "meta.ServerMap": true,
	"meta.Server": true, "meta.SessionInfo": true, "meta.FilesetReads": true}

// rootMethod writes mountroot's method of m.
func (g *gen) rootMethod(m method, optional bool) error {
	a := g.cfg.recv
	taken := map[string]bool{a: true, "ctx": true, "err": true}
	for i := range m.results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	names, ptypes, rtypes := g.sig(m, taken)
	var params, args, results, rets []string
	params = append(params, "ctx context.Context")
	args = append(args, "ctx")
	for i, n := range names {
		params = append(params, n+" "+ptypes[i])
		switch t := ptypes[i]; {
		case t == "meta.Ino":
			args = append(args, a+".m("+n+")")
		case rootSafe[t]:
			args = append(args, n)
		default:
			return fmt.Errorf("%s.%s: parameter %s (%s) may carry an inode number the mount's root must map: write mountroot's %s by hand", m.iface, m.name, n, t, m.name)
		}
	}
	for i, t := range rtypes {
		if t != "meta.Inode" && !rootSafe[t] {
			return fmt.Errorf("%s.%s: a result of type %s may carry an inode number the mount's root must map: write mountroot's %s by hand", m.iface, m.name, t, m.name)
		}
		results = append(results, fmt.Sprintf("r%d %s", i, t))
		rets = append(rets, fmt.Sprintf("r%d", i))
	}
	results = append(results, "err error")
	on := a + ".api"
	if optional {
		on = a + ".fwd()"
	}
	call := fmt.Sprintf("%s.%s(%s)", on, m.name, strings.Join(args, ", "))
	w := g.w
	fmt.Fprintf(w, "\n// %s implements %s.\n", m.name, g.q(m.iface))
	fmt.Fprintf(w, "func (%s %s) %s(%s) (%s) {\n", a, g.cfg.typ, m.name, strings.Join(params, ", "), strings.Join(results, ", "))
	if len(rtypes) == 0 {
		fmt.Fprintf(w, "\treturn %s.e(%s)\n}\n", a, call)
		return nil
	}
	fmt.Fprintf(w, "\t%s = %s\n", strings.Join(append(slices.Clone(rets), "err"), ", "), call)
	for i, t := range rtypes {
		if t == "meta.Inode" {
			fmt.Fprintf(w, "\t%s.mapInode(&r%d)\n", a, i)
		}
	}
	fmt.Fprintf(w, "\treturn %s\n}\n", strings.Join(append(slices.Clone(rets), a+".e(err)"), ", "))
	return nil
}
