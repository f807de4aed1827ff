package main

import (
	"fmt"
	"slices"
	"strings"
)

// -style mountroot (package mountroot's API, a meta.API seen from one of
// its directories) writes the method of each interface method not written
// by hand: every meta.Ino argument goes through the receiver's m (the
// swap of meta.RootIno and the mount's root), the error through e (a
// commit conflict's inode), and every argument and result of a type meta.T
// or []meta.T for which package mountroot defines a method map<T>(*meta.T)
// through it (mapInode, mapQuota, ...; each element of a slice, on a copy
// of an argument's slice); optional interfaces' methods are made through
// fwd() (meta.Forward). The swap is its own inverse, so one mapper serves
// arguments and results. A parameter or result of any other type that
// may carry an inode number (a struct neither listed in rootSafe nor
// mapped, a callback) fails generation: write its type's mapper, or the
// method by hand, in package mountroot, which is the one place that knows
// which fields are inode numbers.

// rootSafe are the types mountroot's generated methods pass on unmapped:
// they carry no inode number.
var rootSafe = map[string]bool{"string": true, "[]byte": true, "[]string": true, "bool": true,
	"int": true, "uint32": true, "uint64": true, "int64": true, "block.Hash": true,
	"time.Duration": true, "time.Time": true, "meta.SessionID": true,
	"meta.SetAttrReq": true, "meta.Recipe": true, "meta.StatFS": true, "meta.ServerMap": true,
	"meta.Server": true, "meta.SessionInfo": true, "meta.FilesetReads": true,
	"meta.GatewayNode": true, "[]meta.GatewayNode": true}

// rootMap writes the mapping of variable n of type t, if it needs one, and
// says whether t is one the generated code may pass on.
func (g *gen) rootMap(n, t string, arg bool) (string, bool) {
	a := g.cfg.recv
	if rootSafe[t] {
		return "", true
	}
	name, slice, ok := g.mapper("map", t)
	if !ok {
		return "", false
	}
	if !slice {
		return fmt.Sprintf("\t%s.%s(&%s)\n", a, name, n), true
	}
	clone := ""
	if arg { // the caller's slice is not changed
		g.used["slices"] = true
		clone = fmt.Sprintf("\t%s = slices.Clone(%s)\n", n, n)
	}
	return fmt.Sprintf("%s\tfor i := range %s {\n\t\t%s.%s(&%s[i])\n\t}\n", clone, n, a, name, n), true
}

// rootMethod writes mountroot's method of m.
func (g *gen) rootMethod(m method, optional bool) error {
	a := g.cfg.recv
	taken := map[string]bool{a: true, "ctx": true, "err": true, "i": true}
	for i := range m.results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	names, ptypes, rtypes := g.sig(m, taken)
	var params, args, results, rets []string
	var before, after strings.Builder
	params = append(params, "ctx context.Context")
	args = append(args, "ctx")
	for i, n := range names {
		params = append(params, n+" "+ptypes[i])
		if ptypes[i] == "meta.Ino" {
			args = append(args, a+".m("+n+")")
			continue
		}
		code, ok := g.rootMap(n, ptypes[i], true)
		if !ok {
			return fmt.Errorf("%s.%s: parameter %s (%s) may carry an inode number the mount's root must map: write mountroot's %s by hand, or a method map%s of mountroot's API", m.iface, m.name, n, ptypes[i], m.name, mapperBase(ptypes[i]))
		}
		before.WriteString(code)
		args = append(args, n)
	}
	for i, t := range rtypes {
		r := fmt.Sprintf("r%d", i)
		code, ok := g.rootMap(r, t, false)
		if !ok {
			return fmt.Errorf("%s.%s: a result of type %s may carry an inode number the mount's root must map: write mountroot's %s by hand, or a method map%s of mountroot's API", m.iface, m.name, t, m.name, mapperBase(t))
		}
		after.WriteString(code)
		results = append(results, r+" "+t)
		rets = append(rets, r)
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
	w.WriteString(before.String())
	if len(rtypes) == 0 {
		fmt.Fprintf(w, "\treturn %s.e(%s)\n}\n", a, call)
		return nil
	}
	fmt.Fprintf(w, "\t%s = %s\n", strings.Join(append(slices.Clone(rets), "err"), ", "), call)
	w.WriteString(after.String())
	fmt.Fprintf(w, "\treturn %s\n}\n", strings.Join(append(slices.Clone(rets), a+".e(err)"), ", "))
	return nil
}

// mapperBase is the T of a type meta.T or []meta.T, for the error's hint.
func mapperBase(t string) string {
	t = strings.TrimPrefix(t, "[]")
	t = t[strings.LastIndex(t, ".")+1:]
	return t
}
