package main

import (
	"fmt"
	"slices"
	"strings"
)

// -style authz (package authz's view) writes, from the //tessera:authz
// directive on each method of meta's interfaces,
//
//	//tessera:authz PERM SCOPE [logged][: note]
//
// the rule table of every interface asked for (rules<Iface>, and tables
// listing them) and the view's method of each method not written by hand.
// PERM is read, write, register, admin or cache (auth.ReadNamespace,
// WriteNamespace, RegisterServer, Administer, CacheHome); SCOPE is tree
// (a confined caller may make the call inside its subtree: the method's
// inode arguments are checked against its root and its replies mapped) or
// cluster (a confined caller is refused); logged has the view log each
// call with who made it and its plain parameters (administration that
// changes the cluster, not the walks and reports). A method without a directive,
// or with one that does not parse, fails generation: there is no default
// rule.
//
// A generated view method authorizes the call (view.begin; an optional
// interface's, made through meta.Forward on the unbound service,
// Authorizer.authorize), checks every meta.Ino parameter against a
// confined caller's root, makes the call, maps every meta.Inode result,
// and logs a logged method's call. A tree method's parameter or result of
// a type meta.T or []meta.T (each element) that may carry inode numbers
// goes through the view's per-type mappers, written by hand in package
// authz where the type's fields are known:
//
//	func (v *view) inT(ctx context.Context, c caller, method string, x *meta.T) error // check and map an argument
//	func (v *view) outT(ctx context.Context, c caller, method string, x *meta.T)      // map a result
//
// and a logged method's parameter of type meta.T is logged by
// func (v *view) logT(x meta.T) []any (key-value pairs), when there is
// one. A tree method with such a type and no mapper (a slice of entries,
// a request) fails generation: write the mapper, or the method by hand.

// perms are the directive's permissions.
var perms = map[string]string{"read": "auth.ReadNamespace", "write": "auth.WriteNamespace",
	"register": "auth.RegisterServer", "admin": "auth.Administer", "cache": "auth.CacheHome"}

// treeSafe are the types a tree method's generated view passes through
// unmapped: they carry no inode number.
var treeSafe = map[string]bool{"string": true, "[]byte": true, "[]string": true, "bool": true,
	"int": true, "uint32": true, "uint64": true, "int64": true, "block.Hash": true,
	"meta.SetAttrReq": true, "meta.Recipe": true, "meta.StatFS": true, "meta.ServerMap": true}

// rule is a method's directive, parsed.
type authzRule struct {
	perm, scope, note string
	logged            bool // the call is logged with who made it
}

// parseAuthz reads m's directive.
func parseAuthz(m method) (authzRule, error) {
	if m.authz == "" {
		return authzRule{}, fmt.Errorf("%s.%s has no //tessera:authz directive: say who may call it (//tessera:authz read|write|register|admin|cache tree|cluster)", m.iface, m.name)
	}
	words, note, _ := strings.Cut(m.authz, ":")
	f := strings.Fields(words)
	if len(f) < 2 || len(f) > 3 || perms[f[0]] == "" || (f[1] != "tree" && f[1] != "cluster") || len(f) == 3 && f[2] != "logged" {
		return authzRule{}, fmt.Errorf("%s.%s: //tessera:authz %q: want PERM SCOPE [logged], PERM one of read, write, register, admin, cache and SCOPE tree or cluster", m.iface, m.name, m.authz)
	}
	return authzRule{perm: f[0], scope: f[1], note: strings.TrimSpace(note), logged: len(f) == 3}, nil
}

// authzFile writes the rule tables and the view methods.
func (g *gen) authzFile(ifaces []string, hand map[string]bool) (skipped, asserts []string, err error) {
	w := g.w
	g.used["auth"] = true
	var tables []string
	var todo []method
	for _, in := range ifaces {
		ms, err := g.mp.methods(in)
		if err != nil {
			return nil, nil, err
		}
		asserts = append(asserts, g.q(in))
		tables = append(tables, in)
		fmt.Fprintf(w, "\n// rules%s: %s's rules.\nvar rules%s = map[string]rule{\n", in, g.q(in), in)
		for _, m := range ms {
			r, err := parseAuthz(m)
			if err != nil {
				return nil, nil, err
			}
			scope := "inTree"
			if r.scope == "cluster" {
				scope = "cluster"
			}
			note := ""
			if r.note != "" {
				note = " // " + r.note
			}
			fmt.Fprintf(w, "\t%q: {%s, %s},%s\n", m.name, perms[r.perm], scope, note)
			if hand[m.name] {
				skipped = append(skipped, m.name)
			} else {
				todo = append(todo, m)
			}
		}
		fmt.Fprintf(w, "}\n")
	}
	fmt.Fprintf(w, "\n// tables are the per-interface tables, by the interfaces they cover.\n")
	fmt.Fprintf(w, "var tables = []struct {\n\tifaces []string\n\trules map[string]rule\n}{\n")
	for _, in := range tables {
		fmt.Fprintf(w, "\t{[]string{%q}, rules%s},\n", in, in)
	}
	fmt.Fprintf(w, "}\n")
	for _, m := range todo {
		r, _ := parseAuthz(m)
		if err := g.viewMethod(m, r, slices.Contains(g.mp.optional, m.iface)); err != nil {
			return nil, nil, err
		}
	}
	return skipped, asserts, nil
}

// viewMethod writes the view's method of m under rule r.
func (g *gen) viewMethod(m method, r authzRule, optional bool) error {
	v := g.cfg.recv
	taken := map[string]bool{v: true, "ctx": true, "err": true, "c": true, "api": true, "i": true}
	for i := range m.results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	names, ptypes, rtypes := g.sig(m, taken)
	tree := r.scope == "tree"
	useC := r.logged
	inMap := make([]string, len(names))   // a parameter's in<T> mapper
	outMap := make([]string, len(rtypes)) // a result's out<T> mapper
	slice := map[string]bool{}            // the mapped variables that are slices
	for i, t := range ptypes {
		switch {
		case t == "meta.Ino":
			useC = useC || tree
		case tree && !treeSafe[t]:
			name, sl, ok := g.mapper("in", t)
			if !ok {
				return fmt.Errorf("%s.%s: parameter %s (%s) may carry an inode number a confined caller's root must map: write view's %s by hand in package authz, or a method in%s of view", m.iface, m.name, names[i], t, m.name, mapperBase(t))
			}
			inMap[i], slice[names[i]], useC = name, sl, true
		}
	}
	for i, t := range rtypes {
		switch {
		case t == "meta.Inode":
			useC = useC || tree
		case tree && !treeSafe[t]:
			name, sl, ok := g.mapper("out", t)
			if !ok {
				return fmt.Errorf("%s.%s: a result of type %s may carry an inode number a confined caller's root must map: write view's %s by hand in package authz, or a method out%s of view", m.iface, m.name, t, m.name, mapperBase(t))
			}
			outMap[i], slice[fmt.Sprintf("r%d", i)], useC = name, sl, true
		}
	}
	params, results, _, ret := signature(names, ptypes, rtypes)
	c := "_"
	if useC {
		c = "c"
	}
	w := g.w
	fmt.Fprintf(w, "\n// %s implements %s (//tessera:authz %s %s).\n", m.name, g.q(m.iface), r.perm, r.scope)
	fmt.Fprintf(w, "func (%s %s) %s(%s) (%s) {\n", v, g.cfg.typ, m.name, strings.Join(params, ", "), strings.Join(results, ", "))
	on := "api"
	if optional {
		// Made on the unbound service, so only the caller is checked
		// (not the session's owner, as begin would).
		on = "meta.Forward{Next: " + v + ".a.svc}"
		if useC {
			fmt.Fprintf(w, "\tc, err := %s.a.authorize(ctx, %q)\n\tif err != nil {\n\t\treturn %s\n\t}\n", v, m.name, ret("err"))
		} else {
			fmt.Fprintf(w, "\tif _, err = %s.a.authorize(ctx, %q); err != nil {\n\t\treturn %s\n\t}\n", v, m.name, ret("err"))
		}
	} else {
		fmt.Fprintf(w, "\t%s, api, err := %s.begin(ctx, %q)\n", c, v, m.name)
		fmt.Fprintf(w, "\tif err != nil {\n\t\treturn %s\n\t}\n", ret("err"))
	}
	// each writes mapper's call on variable n (each element of a slice).
	each := func(n, call string) {
		if !slice[n] {
			fmt.Fprintf(w, call, "&"+n)
			return
		}
		fmt.Fprintf(w, "\tfor i := range %s {\n\t", n)
		fmt.Fprintf(w, call, "&"+n+"[i]")
		fmt.Fprintf(w, "\t}\n")
	}
	if tree {
		for i, n := range names {
			switch {
			case ptypes[i] == "meta.Ino":
				fmt.Fprintf(w, "\tif %s, err = %s.a.in(ctx, c, %q, %s); err != nil {\n\t\treturn %s\n\t}\n", n, v, m.name, n, ret("err"))
			case inMap[i] != "":
				if slice[n] { // the caller's slice is not changed
					g.used["slices"] = true
					fmt.Fprintf(w, "\t%s = slices.Clone(%s)\n", n, n)
				}
				each(n, fmt.Sprintf("\tif err = %s.%s(ctx, c, %q, %%s); err != nil {\n\t\treturn %s\n\t}\n", v, inMap[i], m.name, ret("err")))
			}
		}
	}
	lhs := ret("err")
	fmt.Fprintf(w, "\t%s = %s.%s(%s)\n", lhs, on, m.name, strings.Join(append([]string{"ctx"}, names...), ", "))
	if tree {
		for i, t := range rtypes {
			switch {
			case t == "meta.Inode":
				fmt.Fprintf(w, "\tc.outInode(&r%d)\n", i)
			case outMap[i] != "":
				each(fmt.Sprintf("r%d", i), fmt.Sprintf("\t%s.%s(ctx, c, %q, %%s)\n", v, outMap[i], m.name))
			}
		}
	}
	if r.logged {
		var kv, structs []string
		for i, n := range names {
			switch t := ptypes[i]; {
			case t == "string":
				kv = append(kv, fmt.Sprintf("%q, meta.Quote(%s)", snake(n), n))
			case t == "meta.Ino":
				kv = append(kv, fmt.Sprintf("%q, uint64(%s)", snake(n), n))
			case numeric[t] || t == "bool":
				kv = append(kv, fmt.Sprintf("%q, %s", snake(n), n))
			default:
				if name, sl, ok := g.mapper("log", t); ok && !sl {
					structs = append(structs, fmt.Sprintf("%s.%s(%s)", v, name, n))
				}
			}
		}
		args := strings.Join(append([]string{"ctx", "c.id", fmt.Sprintf("%q", m.name), "err"}, kv...), ", ")
		if len(structs) > 0 { // a struct's fields, by the package's log<T> method
			all := "[]any{" + strings.Join(kv, ", ") + "}"
			if len(kv) == 0 && len(structs) == 1 {
				all = structs[0]
			} else {
				for _, s := range structs {
					all = "append(" + all + ", " + s + "...)"
				}
			}
			args = fmt.Sprintf("ctx, c.id, %q, err, %s...", m.name, all)
		}
		fmt.Fprintf(w, "\t%s.a.admin(%s)\n", v, args)
	}
	fmt.Fprintf(w, "\treturn %s\n}\n", ret("err"))
	return nil
}
