package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// rpcMethods writes, with -style client, the protocol client's method for
// every method of ifaces, and with -style server the server's handler of
// every RPC of the ifaces' services (FS: FSService), each but those the
// type has by hand (rpc.go states the convention). It returns the names
// left out and the interfaces the type is asserted to implement.
func (g *gen) rpcMethods(dir, root, module string, ifaces []string, hand map[string]bool) (skipped, asserts []string, err error) {
	pbDir, err := filepath.Abs(filepath.Join(dir, g.cfg.pb))
	if err != nil {
		return nil, nil, err
	}
	rel, err := filepath.Rel(root, pbDir)
	if err != nil {
		return nil, nil, err
	}
	path := module + "/" + filepath.ToSlash(rel)
	p, err := loadProto(dir, pbDir, "pb", path, g.mp)
	if err != nil {
		return nil, nil, err
	}
	defer g.usedIn()
	g.pb = p
	g.used["pb"] = true
	g.mp.imports["pb"] = path
	byName := map[string]method{}
	var all []method
	for _, in := range ifaces {
		ms, err := g.mp.methods(in)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range ms {
			if prev, ok := byName[m.rpcName()]; ok {
				return nil, nil, fmt.Errorf("%s.%s and %s.%s both name rpc %s", prev.iface, prev.name, m.iface, m.name, m.rpcName())
			}
			byName[m.rpcName()] = m
			all = append(all, m)
		}
	}
	if g.cfg.style == "client" {
		g.used["grpc"] = true
		g.mp.imports["grpc"] = "google.golang.org/grpc"
		for _, in := range ifaces {
			asserts = append(asserts, g.q(in))
		}
		for _, m := range all {
			if hand[m.name] {
				skipped = append(skipped, m.name)
				continue
			}
			r, ok := p.rpcs[m.rpcName()]
			switch {
			case !ok:
				return nil, nil, fmt.Errorf("%s.%s: the protocol has no rpc %s (add it to the proto, name another with //tessera:rpc, or write %s's method by hand)", m.iface, m.name, m.rpcName(), g.cfg.typ)
			case r.stream:
				return nil, nil, fmt.Errorf("%s.%s: rpc %s is a stream: write %s's method by hand", m.iface, m.name, r.name, g.cfg.typ)
			}
			if err := g.clientMethod(m, r); err != nil {
				return nil, nil, err
			}
		}
		return skipped, asserts, nil
	}
	// The services served are those holding the ifaces' RPCs, in the order
	// their first method comes; every RPC of them must be some method's.
	var services []string
	for _, in := range ifaces {
		found := false
		for _, m := range all {
			if r, ok := p.rpcs[m.rpcName()]; ok && m.iface == in {
				found = true
				if !slices.Contains(services, r.service) {
					services = append(services, r.service)
				}
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("-ifaces %s: no rpc of the protocol is one of its methods", in)
		}
	}
	for _, svc := range services {
		asserts = append(asserts, "pb."+svc+"Server")
		for _, name := range p.order[svc] {
			if hand[name] {
				skipped = append(skipped, name)
				continue
			}
			r := p.rpcs[name]
			m, ok := byName[name]
			switch {
			case !ok:
				return nil, nil, fmt.Errorf("rpc %s.%s is no method of %s: write %s's handler by hand", svc, name, strings.Join(ifaces, ", "), g.cfg.typ)
			case r.stream:
				return nil, nil, fmt.Errorf("rpc %s.%s is a stream: write %s's handler by hand", svc, name, g.cfg.typ)
			}
			if err := g.serverMethod(m, r); err != nil {
				return nil, nil, err
			}
		}
	}
	return skipped, asserts, nil
}

// sig renders a method's parameters (but ctx) and results (but the
// error): names, the names free of the generated code's own (taken), and
// types.
func (g *gen) sig(m method, taken map[string]bool) (names, ptypes, rtypes []string) {
	for i, p := range m.params[1:] {
		n := p.name
		if n == "_" {
			n = fmt.Sprintf("p%d", i+1)
		}
		base := n
		for k := 2; taken[n]; k++ {
			n = fmt.Sprintf("%sArg%d", base, k)
		}
		taken[n] = true
		names = append(names, n)
		ptypes = append(ptypes, g.typ(p.typ))
	}
	for _, t := range m.results[:len(m.results)-1] {
		rtypes = append(rtypes, g.typ(t))
	}
	return names, ptypes, rtypes
}

// fieldFor returns the message field parameter n goes in: the field of
// its name, or a one-field message's only field for a one-parameter
// method.
func fieldFor(fields []msgField, n string, params int) (msgField, bool) {
	want := strings.ToUpper(n[:1]) + n[1:]
	for _, f := range fields {
		if f.name == want {
			return f, true
		}
	}
	if len(fields) == 1 && params == 1 {
		return fields[0], true
	}
	return msgField{}, false
}

// checkFields fails unless every field of msg is some parameter's.
func checkFields(m method, r rpc, fields []msgField, names []string) error {
	for _, f := range fields {
		found := false
		for _, n := range names {
			if g, ok := fieldFor(fields, n, len(names)); ok && g.name == f.name {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s.%s: %s's field %s is no parameter's (name a parameter %s, or write a conversion)", m.iface, m.name, r.req, f.name, strings.ToLower(f.name[:1])+f.name[1:])
		}
	}
	return nil
}

// snake is name in snake case, for field names in errors.
func snake(name string) string {
	return (&gen{}).op(method{name: name})
}

// clientMethod writes the protocol client's method for m over rpc r.
func (g *gen) clientMethod(m method, r rpc) error {
	c := g.cfg.recv
	taken := map[string]bool{c: true, "ctx": true, "err": true, "rep": true, "opts": true}
	for i := range m.results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	names, ptypes, rtypes := g.sig(m, taken)
	p := g.pb
	var req string
	if n, ok := p.find(ptypes, []string{r.req}); ok {
		req = n + "(" + strings.Join(names, ", ") + ")"
	} else {
		fields, ok := p.msgs[r.req]
		if !ok {
			return fmt.Errorf("rpc %s: no message %s", r.name, r.req)
		}
		var parts []string
		for i, n := range names {
			f, ok := fieldFor(fields, n, len(names))
			if !ok {
				return fmt.Errorf("%s.%s: parameter %s has no field in %s (write func(%s) %s, or name the field)", m.iface, m.name, n, r.req, strings.Join(ptypes, ", "), r.req)
			}
			v, err := p.valueOut(n, ptypes[i], f.typ)
			if err != nil {
				return fmt.Errorf("%s.%s: parameter %s: %w", m.iface, m.name, n, err)
			}
			parts = append(parts, f.name+": "+v)
		}
		if err := checkFields(m, r, fields, names); err != nil {
			return err
		}
		req = "&" + strings.TrimPrefix(r.req, "*") + "{" + strings.Join(parts, ", ") + "}"
	}
	params, results, rets, ret := signature(names, ptypes, rtypes)
	w := g.w
	fmt.Fprintf(w, "\n// %s implements %s over rpc %s.%s.\n", m.name, g.q(m.iface), r.service, r.name)
	fmt.Fprintf(w, "func (%s %s) %s(%s) (%s) {\n", c, g.cfg.typ, m.name, strings.Join(params, ", "), strings.Join(results, ", "))
	if len(rtypes) == 0 {
		if r.rep != "*pb.Empty" {
			return fmt.Errorf("%s.%s returns only an error, but rpc %s replies %s, not *pb.Empty", m.iface, m.name, r.name, r.rep)
		}
		fmt.Fprintf(w, "\treturn %s.call(ctx, %q, func(ctx context.Context, opts ...grpc.CallOption) error {\n", c, r.name)
		fmt.Fprintf(w, "\t\t_, err := %s.mc.%s(ctx, %s, opts...)\n\t\treturn err\n\t})\n}\n", c, r.name, req)
		return nil
	}
	fmt.Fprintf(w, "\tvar rep %s\n", r.rep)
	fmt.Fprintf(w, "\terr = %s.call(ctx, %q, func(ctx context.Context, opts ...grpc.CallOption) (err error) {\n", c, r.name)
	fmt.Fprintf(w, "\t\trep, err = %s.mc.%s(ctx, %s, opts...)\n\t\treturn err\n\t})\n", c, r.name, req)
	fmt.Fprintf(w, "\tif err != nil {\n\t\treturn %s\n\t}\n", ret("err"))
	ioErr := fmt.Sprintf("%s.ioErr(%q, err)", c, r.name)
	if n, ok := p.find([]string{r.rep}, append(slices.Clone(rtypes), "error")); ok {
		fmt.Fprintf(w, "\tif %s = %s(rep); err != nil {\n\t\treturn %s\n\t}\n", ret("err"), n, ret(ioErr))
	} else if n, ok := p.find([]string{r.rep}, rtypes); ok {
		fmt.Fprintf(w, "\t%s = %s(rep)\n", strings.Join(rets, ", "), n)
	} else {
		fields := p.msgs[r.rep]
		if len(fields) != len(rtypes) {
			return fmt.Errorf("%s.%s: no conversion from %s to its results (write func(%s) (%s, error))", m.iface, m.name, r.rep, r.rep, strings.Join(rtypes, ", "))
		}
		for i, f := range fields {
			v, withErr, err := p.valueIn("rep."+f.name, snake(r.name)+"."+f.proto, f.typ, rtypes[i])
			if err != nil {
				return fmt.Errorf("%s.%s: result %d: %w", m.iface, m.name, i, err)
			}
			if withErr {
				fmt.Fprintf(w, "\tif r%d, err = %s; err != nil {\n\t\treturn %s\n\t}\n", i, v, ret(ioErr))
			} else {
				fmt.Fprintf(w, "\tr%d = %s\n", i, v)
			}
		}
	}
	fmt.Fprintf(w, "\treturn %s\n}\n", ret("nil"))
	return nil
}

// serverMethod writes the server's handler of rpc r, which serves m.
func (g *gen) serverMethod(m method, r rpc) error {
	s := g.cfg.recv
	taken := map[string]bool{s: true, "ctx": true, "err": true, "r": true, "api": true, "ok": true}
	for i := range m.results {
		taken[fmt.Sprintf("r%d", i)] = true
	}
	names, ptypes, rtypes := g.sig(m, taken)
	p := g.pb
	w := g.w
	fmt.Fprintf(w, "\n// %s serves %s.%s.\n", r.name, g.q(m.iface), m.name)
	fmt.Fprintf(w, "func (%s %s) %s(ctx context.Context, r %s) (%s, error) {\n", s, g.cfg.typ, r.name, r.req, r.rep)
	fail := "if err != nil {\n\t\treturn nil, statusOf(err)\n\t}\n"
	if slices.Contains(g.mp.optional, m.iface) {
		// An optional interface's method: ENOTSUP when the API lacks it.
		fmt.Fprintf(w, "\tapi, ok := %s.on(ctx).(%s)\n", s, g.q(m.iface))
		fmt.Fprintf(w, "\tif !ok {\n\t\treturn nil, statusOf(unsupported(%q, %q))\n\t}\n", m.iface, m.name)
	}
	args := []string{"ctx"}
	switch {
	case len(names) == 0:
	case p.has(r.req, ptypes, true):
		n, _ := p.find([]string{r.req}, append(slices.Clone(ptypes), "error"))
		fmt.Fprintf(w, "\t%s, err := %s(r)\n\t%s", strings.Join(names, ", "), n, fail)
		args = append(args, names...)
	case p.has(r.req, ptypes, false):
		n, _ := p.find([]string{r.req}, ptypes)
		fmt.Fprintf(w, "\t%s := %s(r)\n", strings.Join(names, ", "), n)
		args = append(args, names...)
	default:
		fields, ok := p.msgs[r.req]
		if !ok {
			return fmt.Errorf("rpc %s: no message %s", r.name, r.req)
		}
		if err := checkFields(m, r, fields, names); err != nil {
			return err
		}
		for i, n := range names {
			f, ok := fieldFor(fields, n, len(names))
			if !ok {
				return fmt.Errorf("%s.%s: parameter %s has no field in %s (write func(%s) (%s, error), or name the field)", m.iface, m.name, n, r.req, r.req, strings.Join(ptypes, ", "))
			}
			v, withErr, err := p.valueIn("r."+f.name, snake(r.name)+"."+f.proto, f.typ, ptypes[i])
			if err != nil {
				return fmt.Errorf("%s.%s: parameter %s: %w", m.iface, m.name, n, err)
			}
			if withErr {
				fmt.Fprintf(w, "\t%s, err := %s\n\t%s", n, v, fail)
				v = n
			}
			args = append(args, v)
		}
	}
	call := fmt.Sprintf("%s.on(ctx).%s(%s)", s, m.name, strings.Join(args, ", "))
	if slices.Contains(g.mp.optional, m.iface) {
		call = fmt.Sprintf("api.%s(%s)", m.name, strings.Join(args, ", "))
	}
	if len(rtypes) == 0 {
		if r.rep != "*pb.Empty" {
			return fmt.Errorf("%s.%s returns only an error, but rpc %s replies %s, not *pb.Empty", m.iface, m.name, r.name, r.rep)
		}
		fmt.Fprintf(w, "\tif err := %s; err != nil {\n\t\treturn nil, statusOf(err)\n\t}\n", call)
		fmt.Fprintf(w, "\treturn &pb.Empty{}, nil\n}\n")
		return nil
	}
	var rets []string
	for i := range rtypes {
		rets = append(rets, fmt.Sprintf("r%d", i))
	}
	fmt.Fprintf(w, "\t%s, err := %s\n\t%s", strings.Join(rets, ", "), call, fail)
	if n, ok := p.find(rtypes, []string{r.rep}); ok {
		fmt.Fprintf(w, "\treturn %s(%s), nil\n}\n", n, strings.Join(rets, ", "))
		return nil
	}
	fields := p.msgs[r.rep]
	if len(fields) != len(rtypes) {
		return fmt.Errorf("%s.%s: no conversion from its results to %s (write func(%s) %s)", m.iface, m.name, r.rep, strings.Join(rtypes, ", "), r.rep)
	}
	var parts []string
	for i, f := range fields {
		v, err := p.valueOut(rets[i], rtypes[i], f.typ)
		if err != nil {
			return fmt.Errorf("%s.%s: result %d: %w", m.iface, m.name, i, err)
		}
		parts = append(parts, f.name+": "+v)
	}
	fmt.Fprintf(w, "\treturn &%s{%s}, nil\n}\n", strings.TrimPrefix(r.rep, "*"), strings.Join(parts, ", "))
	return nil
}

// has reports whether a conversion takes message msg to types (and an
// error, with withErr).
func (p *proto) has(msg string, types []string, withErr bool) bool {
	rs := slices.Clone(types)
	if withErr {
		rs = append(rs, "error")
	}
	_, ok := p.find([]string{msg}, rs)
	return ok
}

// usedIn sets the packages the generated body names (every name known
// as an import followed by a dot), the types it matched but never wrote
// left out.
func (g *gen) usedIn() {
	g.used = map[string]bool{}
	for _, m := range regexp.MustCompile(`\b([a-z]\w*)\.`).FindAllStringSubmatch(g.w.String(), -1) {
		if _, ok := g.mp.imports[m[1]]; ok {
			g.used[m[1]] = true
		}
	}
}

// signature is a generated method's parameters (ctx first, then names with
// their types), its named results r0.. and err, their names rets, and ret,
// the return list of those results with the given error expression last.
func signature(names, ptypes, rtypes []string) (params, results, rets []string, ret func(err string) string) {
	params = append(params, "ctx context.Context")
	for i, n := range names {
		params = append(params, n+" "+ptypes[i])
	}
	for i, t := range rtypes {
		results = append(results, fmt.Sprintf("r%d %s", i, t))
		rets = append(rets, fmt.Sprintf("r%d", i))
	}
	results = append(results, "err error")
	ret = func(e string) string { return strings.Join(append(slices.Clone(rets), e), ", ") }
	return params, results, rets, ret
}
