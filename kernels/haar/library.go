package haar

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// DebianDir is where Debian's opencv-data package puts OpenCV's cascades.
const DebianDir = "/usr/share/opencv4/haarcascades"

// Library names the cascade files the server may read: the *.xml files in
// the directories given at start. Requests choose a cascade by name (the
// file name without .xml), never by path. Cascades are parsed on first use
// and kept. Files in the old format (opencv-haar-classifier, which Parse
// refuses: opencv-data ships one) are not among its Names; Get says why.
// A Library is safe for concurrent use.
type Library struct {
	files map[string]string // name -> path; fixed after OpenLibrary
	old   map[string]string // name -> path of an old-format file; fixed after OpenLibrary

	mu     sync.Mutex
	loaded map[string]*Cascade
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// OpenLibrary lists the cascades in dirs; where two hold the same name the
// earlier directory wins.
func OpenLibrary(dirs ...string) (*Library, error) {
	l := &Library{files: make(map[string]string), old: make(map[string]string), loaded: make(map[string]*Cascade)}
	for _, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("cascade directory: %w", err)
		}
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), ".xml")
			if !ok || !validName.MatchString(name) || !e.Type().IsRegular() {
				continue
			}
			_, dup := l.files[name]
			if _, old := l.old[name]; dup || old {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if oldFormat(path) {
				l.old[name] = path
			} else {
				l.files[name] = path
			}
		}
	}
	return l, nil
}

// oldFormat reports whether the file at path declares the old
// opencv-haar-classifier format in its first 4 KiB.
func oldFormat(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false // Get reports it
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return strings.Contains(string(head[:n]), `type_id="opencv-haar-classifier"`)
}

// Names lists the cascades, sorted.
func (l *Library) Names() []string {
	if l == nil {
		return nil
	}
	names := make([]string, 0, len(l.files))
	for n := range l.files {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Get returns the cascade called name, parsing its file on first use.
func (l *Library) Get(name string) (*Cascade, error) {
	path, ok := l.files[name]
	if p, old := l.old[name]; old {
		return nil, fmt.Errorf("cascade %q (%s): %w", name, p, errOldFormat)
	}
	if !ok {
		if len(l.files) == 0 {
			return nil, fmt.Errorf("cascade %q: no cascades installed (install Debian's opencv-data or start the server with --cascade-dir)", name)
		}
		return nil, fmt.Errorf("cascade %q: not installed (have: %s)", name, strings.Join(l.Names(), ", "))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.loaded[name]; c != nil {
		return c, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cascade %q: %w", name, err)
	}
	defer f.Close()
	c, err := Parse(io.LimitReader(f, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("cascade %q (%s): %w", name, path, err)
	}
	l.loaded[name] = c
	return c, nil
}
