package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCgroup(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
		file  string
	}{
		{"v1 own limit", map[string]string{
			"proc/self/cgroup":                                            "5:devices:/\n4:memory:/yarn/container_1\n0::/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                  "9223372036854771712\n",
			"sys/fs/cgroup/memory/yarn/memory.limit_in_bytes":             "9223372036854771712\n",
			"sys/fs/cgroup/memory/yarn/container_1/memory.limit_in_bytes": "2147483648\n",
		}, 2 << 30, "sys/fs/cgroup/memory/yarn/container_1/memory.limit_in_bytes"},
		{"v1 parent's limit is lower", map[string]string{
			"proc/self/cgroup": "4:memory,foo:/kubepods/pod1/c1\n",
			"sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes":    "1073741824\n",
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": "9223372036854771712\n",
		}, 1 << 30, "sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes"},
		{"v2", map[string]string{
			"proc/self/cgroup":                                  "0::/system.slice/app.service\n",
			"sys/fs/cgroup/cgroup.controllers":                  "memory\n",
			"sys/fs/cgroup/system.slice/memory.max":             "max\n",
			"sys/fs/cgroup/system.slice/app.service/memory.max": "536870912\n",
		}, 512 << 20, "sys/fs/cgroup/system.slice/app.service/memory.max"},
		{"v2 in a container namespace: the mount's root", map[string]string{
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "3221225472\n",
		}, 3 << 30, "sys/fs/cgroup/memory.max"},
		{"none set", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, ""},
		{"no cgroup file system", map[string]string{}, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := tree(t, c.files)
			got, file, ok := Sys{Root: root}.Cgroup()
			if ok != (c.want > 0) || got != c.want {
				t.Fatalf("got %d %v, want %d", got, ok, c.want)
			}
			if ok && file != filepath.Join(root, c.file) {
				t.Errorf("from %s, want %s", file, c.file)
			}
		})
	}
}

func TestTotal(t *testing.T) {
	root := tree(t, map[string]string{"proc/meminfo": "MemTotal:       24576000 kB\nMemFree:        100 kB\n"})
	if n, err := (Sys{Root: root}).Total(); err != nil || n != 24576000<<10 {
		t.Fatalf("got %d, %v", n, err)
	}
	if _, err := (Sys{Root: t.TempDir()}).Total(); err == nil {
		t.Fatal("no meminfo: want an error")
	}
}

// TestLive reads this machine's: whatever it finds must be sane.
func TestLive(t *testing.T) {
	n, err := Sys{Root: "/"}.Total()
	if err != nil || n < 64<<20 {
		t.Fatalf("MemTotal %d, %v", n, err)
	}
	if l, f, ok := (Sys{Root: "/"}).Cgroup(); ok && (l <= 0 || f == "") {
		t.Fatalf("cgroup limit %d from %q", l, f)
	}
}
