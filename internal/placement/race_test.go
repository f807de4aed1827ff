//go:build race

package placement

import "testing"

func skipUnderRace(t *testing.T) { t.Skip("statistical test: run without -race") }
