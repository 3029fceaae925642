package memlimit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimited is where a cgroup v1 limit means none (the kernel shows
// PAGE_COUNTER_MAX pages, about 2^63 bytes).
const unlimited = 1 << 60

// Sys reads /proc and /sys/fs/cgroup under Root ("/" on a live system).
type Sys struct {
	Root string
}

// Cgroup returns the lowest memory limit of the process's cgroup and its
// ancestors, and the file it came from; ok is false when none is set (or
// there is no cgroup file system). Where the process's cgroup path is not
// under the mount (a container's own namespace shows "/"), the mount's
// root counts as the process's cgroup.
func (s Sys) Cgroup() (limit int64, file string, ok bool) {
	data, err := os.ReadFile(filepath.Join(s.Root, "proc/self/cgroup"))
	if err != nil {
		return 0, "", false
	}
	consider := func(f string) {
		b, err := os.ReadFile(f)
		if err != nil {
			return
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 || n >= unlimited {
			return
		}
		if !ok || n < limit {
			limit, file, ok = n, f, true
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount, name string
		switch {
		case parts[0] == "0" && parts[1] == "":
			mount, name = "sys/fs/cgroup", "memory.max"
			if _, err := os.Stat(filepath.Join(s.Root, mount, "cgroup.controllers")); err != nil {
				mount = "sys/fs/cgroup/unified" // hybrid: v2 beside v1
			}
		case hasController(parts[1], "memory"):
			mount, name = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		base := filepath.Join(s.Root, mount)
		for dir := filepath.Join(base, filepath.Clean("/"+parts[2])); ; dir = filepath.Dir(dir) {
			consider(filepath.Join(dir, name))
			if dir == base || len(dir) < len(base) {
				break
			}
		}
	}
	return limit, file, ok
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// Total returns the machine's memory, MemTotal of /proc/meminfo.
func (s Sys) Total() (int64, error) {
	f := filepath.Join(s.Root, "proc/meminfo")
	data, err := os.ReadFile(f)
	if err != nil {
		return 0, fmt.Errorf("memory of the machine: %w", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				if n, err := strconv.ParseInt(fields[0], 10, 64); err == nil && n > 0 {
					return n << 10, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("memory of the machine: no MemTotal in %s", f)
}
