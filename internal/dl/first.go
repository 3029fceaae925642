package dl

import (
	"errors"
	"strings"
)

// First returns what open gives for the first of sonames it opens, in
// order; otherwise an error naming each one tried and why it failed.
func First[T any](sonames []string, open func(soname string) (T, error)) (T, error) {
	var zero T
	var why []string
	for _, name := range sonames {
		l, err := open(name)
		if err == nil {
			return l, nil
		}
		why = append(why, err.Error())
	}
	if len(why) == 0 {
		return zero, errors.New("no library to open")
	}
	return zero, errors.New(strings.Join(why, "; "))
}
