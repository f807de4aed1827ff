package up

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"tessera/internal/kv/memkv"
	"tessera/internal/logtest"
	"tessera/internal/meta"
)

// TestMetaRoleSingletonsElected: two meta roles over one shared store run
// each singleton (sweeper, reaper, mover, reclaimer, collector) once
// between them; when the leader stops, the other takes its work over.
func TestMetaRoleSingletonsElected(t *testing.T) {
	store := memkv.New() // its elector spans the Services of this process
	var logs [2]*logtest.Buffer
	var stops [2]func()
	for i := range 2 {
		svc, err := meta.New(store, meta.Options{Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = &logtest.Buffer{}
		stops[i] = StartMetaRole(context.Background(), svc, MetaRole{
			Logger: slog.New(slog.NewTextHandler(logs[i], &slog.HandlerOptions{Level: slog.LevelInfo})),
		})
	}
	defer func() {
		for _, stop := range stops {
			if stop != nil {
				stop()
			}
		}
	}()
	singletons := []string{"sweeper", "reaper", "mover", "reclaimer", "gc"}
	leads := func(i int, name string) bool {
		return strings.Contains(logs[i].String(), "msg=leading election=tessera/"+name+" ")
	}
	// Every singleton gets a leader (bounded wait: campaigns are
	// immediate in one process).
	for _, name := range singletons {
		for n := 0; !leads(0, name) && !leads(1, name); n++ {
			if n == 10000 {
				t.Fatalf("no meta role leads %s:\n%s\n%s", name, logs[0], logs[1])
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, name := range singletons {
		if leads(0, name) && leads(1, name) {
			t.Fatalf("both meta roles lead %s", name)
		}
	}
	// The mover's leader stops; the other takes everything.
	i := 0
	if !leads(0, "mover") {
		i = 1
	}
	stops[i]()
	stops[i] = nil
	other := 1 - i
	for _, name := range singletons {
		for n := 0; !leads(other, name); n++ {
			if n == 10000 {
				t.Fatalf("meta role %d did not take %s over:\n%s", other, name, logs[other])
			}
			time.Sleep(time.Millisecond)
		}
	}
}
