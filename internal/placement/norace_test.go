//go:build !race

package placement

import "testing"

func skipUnderRace(*testing.T) {}
