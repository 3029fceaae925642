package dl

import (
	"errors"
	"testing"
)

func TestFirst(t *testing.T) {
	open := func(name string) (string, error) {
		if name == "good" || name == "also" {
			return name, nil
		}
		return "", errors.New(name + ": no such file")
	}
	if got, err := First([]string{"a", "good", "also"}, open); got != "good" || err != nil {
		t.Errorf("First: %q, %v; want good", got, err)
	}
	if _, err := First([]string{"a", "b"}, open); err == nil || err.Error() != "a: no such file; b: no such file" {
		t.Errorf("First of none that open: %v", err)
	}
	if _, err := First(nil, open); err == nil {
		t.Error("First of no names: no error")
	}
}
