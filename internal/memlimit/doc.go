// Package memlimit finds the memory limit the process runs under: the
// lowest limit of its memory cgroup and that cgroup's ancestors (cgroup
// v2's memory.max, v1's memory.limit_in_bytes), as YARN, Kubernetes and
// Docker set them, and the machine's memory (/proc/meminfo's MemTotal).
//
// Both are read from a root directory (Sys{Root: "/"} on a live system) so
// tests can give a fixture tree.
package memlimit
