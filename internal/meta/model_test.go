package meta_test

import (
	"flag"
	"testing"
	"time"

	"tessera/internal/meta/metatest"
)

var (
	seedFlag  = flag.Uint64("seed", 0, "seed of the model-based random test (0: a new one, logged)")
	stepsFlag = flag.Int("steps", 3000, "steps of the model-based random test")
)

// modelSeed returns the -seed flag or a fresh seed, logging it for replay.
func modelSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("replay with -seed %d", seed)
	return seed
}

func TestModel(t *testing.T) {
	metatest.RunModel(t, memService, modelSeed(t), *stepsFlag)
}
