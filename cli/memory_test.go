package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pixelflight/pixelflight/internal/memlimit"
)

func fakeSys(t *testing.T, cgroupLimit string) memlimit.Sys {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{"proc/meminfo": "MemTotal:       8388608 kB\n", "proc/self/cgroup": "4:memory:/c\n"}
	if cgroupLimit != "" {
		files["sys/fs/cgroup/memory/c/memory.limit_in_bytes"] = cgroupLimit
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return memlimit.Sys{Root: root}
}

func TestMemoryOf(t *testing.T) {
	for _, c := range []struct {
		name            string
		budget, gc      int64
		cgroup          string
		wantBudget, wgc int64
		source          string
	}{
		{"cgroup", 0, 0, "2147483648", 1288490188, 1932735283, "60% of the memory cgroup's limit, 2.0 GiB"},
		{"machine", 0, 0, "", 2 << 30, 2<<30 + 256<<20 + 2*32<<20, "a quarter of the machine's 8.0 GiB"},
		{"flag", 1 << 30, 0, "2147483648", 1 << 30, 1932735283, "--memory-budget"},
		{"both flags", 1 << 30, 3 << 30, "", 1 << 30, 3 << 30, "--memory-budget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := memoryOf(c.budget, c.gc, 2, fakeSys(t, c.cgroup))
			if err != nil || m.budget != c.wantBudget || m.gcLimit != c.wgc || !strings.HasPrefix(m.source, c.source) {
				t.Fatalf("got %+v, %v; want budget %d, gc limit %d, from %q", m, err, c.wantBudget, c.wgc, c.source)
			}
		})
	}
	if _, err := memoryOf(0, 0, 2, memlimit.Sys{Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "give --memory-budget") {
		t.Fatalf("nothing to go by: %v", err)
	}
}
