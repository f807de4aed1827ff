package authz

import "tessera/internal/auth"

// RuleOf returns the permission the table requires for method.
func RuleOf(method string) (auth.Permission, bool) {
	r, ok := rules[method]
	return r.perm, ok
}

// RuleNames lists the methods the table names.
func RuleNames() []string {
	var names []string
	for n := range rules {
		names = append(names, n)
	}
	return names
}

// Tables returns each per-interface table's interface names and methods.
func Tables() map[string][]string {
	out := map[string][]string{}
	for _, t := range tables {
		var names []string
		for n := range t.rules {
			names = append(names, n)
		}
		key := ""
		for i, it := range t.ifaces {
			if i > 0 {
				key += ","
			}
			key += it
		}
		out[key] = names
	}
	return out
}
