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
// and kept. A Library is safe for concurrent use.
type Library struct {
	files map[string]string // name -> path; fixed after OpenLibrary

	mu     sync.Mutex
	loaded map[string]*Cascade
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// OpenLibrary lists the cascades in dirs; where two hold the same name the
// earlier directory wins.
func OpenLibrary(dirs ...string) (*Library, error) {
	l := &Library{files: make(map[string]string), loaded: make(map[string]*Cascade)}
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
			if _, dup := l.files[name]; !dup {
				l.files[name] = filepath.Join(dir, e.Name())
			}
		}
	}
	return l, nil
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
