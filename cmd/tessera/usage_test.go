package main

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagDefs are the flag.FlagSet methods whose last argument is the usage.
var flagDefs = map[string]bool{
	"String": true, "StringVar": true, "Int": true, "IntVar": true, "Int64": true, "Int64Var": true,
	"Uint": true, "UintVar": true, "Uint64": true, "Uint64Var": true, "Bool": true, "BoolVar": true,
	"Duration": true, "DurationVar": true, "Float64": true, "Float64Var": true, "Var": true,
	"Func": true, "BoolFunc": true, "TextVar": true,
}

// TestNoBackQuotesInFlagUsage: Go's flag package takes the first
// back-quoted word of a usage string as the flag's placeholder, so
// "data directory of a `tessera up`" printed as "-data tessera up". No
// usage string of the command line may hold a back quote. The scan reads
// every flag definition in this package's source whose usage is made of
// string constants.
func TestNoBackQuotesInFlagUsage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	defs := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 3 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !flagDefs[sel.Sel.Name] {
				return true
			}
			usage, ok := constString(call.Args[len(call.Args)-1])
			if !ok {
				return true
			}
			defs++
			if bad := badQuote(usage); bad != "" {
				t.Errorf("%s: the usage of a flag back-quotes %q, which the flag package prints as the placeholder (only a one-word placeholder such as `DIR` may be quoted): %q",
					fset.Position(call.Pos()), bad, usage)
			}
			return true
		})
	}
	if defs < 50 {
		t.Fatalf("found only %d flag definitions: the scan is broken", defs)
	}
}

// constString is the value of a string literal or a + of them.
func constString(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok1 := constString(x.X)
		b, ok2 := constString(x.Y)
		return a + b, ok1 && ok2
	case *ast.ParenExpr:
		return constString(x.X)
	}
	return "", false
}

// placeholder is what may stand between back quotes: one word in capitals.
var placeholder = regexp.MustCompile("^[A-Z][A-Z0-9_]*$")

// badQuote returns the first back-quoted span of usage that is not a
// placeholder, or an unpaired back quote; "" when there is none.
func badQuote(usage string) string {
	parts := strings.Split(usage, "`")
	if len(parts)%2 == 0 {
		return "` (unpaired)"
	}
	for i := 1; i < len(parts); i += 2 {
		if !placeholder.MatchString(parts[i]) {
			return parts[i]
		}
	}
	return ""
}

func TestBadQuote(t *testing.T) {
	for usage, want := range map[string]string{
		"data directory of a `tessera up`": "tessera up",
		"policy `NAME` of files":           "",
		"plain":                            "",
		"odd ` quote":                      "` (unpaired)",
	} {
		if got := badQuote(usage); got != want {
			t.Errorf("badQuote(%q) = %q, want %q", usage, got, want)
		}
	}
}

// TestHelpListsTheFilesetSubcommands: tessera -h names every fileset
// subcommand the dispatch knows and no other (it once listed a show that
// did not exist and left out four); the fileset help documents each; each
// is dispatched (not refused as unknown) and a made-up one is refused.
func TestHelpListsTheFilesetSubcommands(t *testing.T) {
	var b strings.Builder
	usage(&b)
	var line string
	for _, l := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "fileset" {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("tessera -h has no fileset line:\n%s", b.String())
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' }) {
		words[w] = true
	}
	for _, c := range filesetCommands {
		if !words[c.name] {
			t.Errorf("tessera -h does not name fileset %s: %q", c.name, line)
		}
		if !strings.Contains(filesetHelp, "tessera fileset "+c.name) {
			t.Errorf("tessera fileset -h does not document %s", c.name)
		}
		err := runFileset(context.Background(), []string{c.name, "--no-such-flag"})
		if err == nil || strings.Contains(err.Error(), "unknown subcommand") {
			t.Errorf("fileset %s --no-such-flag: %v; want a flag error from the subcommand", c.name, err)
		}
	}
	if words["show"] {
		t.Errorf("tessera -h names fileset show, which does not exist: %q", line)
	}
	if err := runFileset(context.Background(), []string{"show"}); err == nil || !strings.Contains(err.Error(), "unknown subcommand") {
		t.Errorf("fileset show: %v; want unknown subcommand", err)
	}
}
