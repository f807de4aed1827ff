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
