package udf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestParamConstraintsArePrepares proves that each param's Choices, Min and
// Max, which the client checks on the driver (python/pixelflight/params.json),
// refuse exactly what its op's Prepare refuses: a value just outside a
// bound is refused with ErrBadCommand, the bound itself (unless exclusive)
// and a value just inside are taken; every choice and "" (the default) are
// taken, other strings refused. context holds the other params a value
// needs to be taken (keys "op", "op.param" and "op.param=value"). A
// bound set by a limit follows the registry's limits.
func TestParamConstraintsArePrepares(t *testing.T) {
	lib := tinyLibrary(t)
	for _, lim := range []Limits{DefaultLimits(), {MaxPixels: 1 << 20, MaxKernelSide: 64}} {
		t.Run(fmt.Sprint(lim.MaxKernelSide), func(t *testing.T) { checkConstraints(t, NewRegistry(lim, lib)) })
	}
}

func checkConstraints(t *testing.T, reg *Registry) {
	context := map[string]map[string]any{
		"detect_faces":               {"cascade": "tiny"},
		"fft_convolve.sigma":         {"size": 3}, // else the kernel side is 6 sigma
		"fft_convolve.png_scale":     {"output": "png"},
		"fft_convolve.kernel=matrix": {"matrix": [][]float64{{1}}},
		"detect_blobs.max_sigma":     {"min_sigma": minSigma},
	}
	prepare := func(op, name string, v any) error {
		params := map[string]any{}
		for _, key := range []string{op, op + "." + name} {
			for k, c := range context[key] {
				params[k] = c
			}
		}
		if s, ok := v.(string); ok {
			for k, c := range context[op+"."+name+"="+s] {
				params[k] = c
			}
		}
		params[name] = v
		b, err := json.Marshal(params)
		if err != nil {
			t.Fatal(err)
		}
		_, err = reg.Prepare(Command{Op: op, Params: b})
		if err != nil && !errors.Is(err, ErrBadCommand) {
			t.Errorf("%s %s: %v does not wrap ErrBadCommand", op, b, err)
		}
		return err
	}
	checked := 0
	for _, op := range reg.Ops() {
		for _, p := range op.Params {
			takes := func(v any) {
				if err := prepare(op.Name, p.Name, v); err != nil {
					t.Errorf("%s.%s = %v is inside %s's constraints, but Prepare refuses it: %v", op.Name, p.Name, v, p.Name, err)
				}
			}
			refuses := func(v any) {
				if err := prepare(op.Name, p.Name, v); err == nil {
					t.Errorf("%s.%s = %v is outside %s's constraints, but Prepare takes it", op.Name, p.Name, v, p.Name)
				}
			}
			if len(p.Choices) > 0 {
				takes("")
			}
			for _, c := range p.Choices {
				takes(c)
				refuses(strings.ToUpper(c))
				refuses(c + "x")
				checked++
			}
			for _, b := range []struct {
				b    *Bound
				side float64 // -1: the bound is a minimum, values below are outside
			}{{p.Min, -1}, {p.Max, 1}} {
				if b.b == nil {
					continue
				}
				checked++
				outside, inside := just(p.Type, b.b.Value, b.side), just(p.Type, b.b.Value, -b.side)
				at := number(p.Type, b.b.Value)
				if b.b.Exclusive {
					outside = at
				} else {
					takes(at)
				}
				takes(inside)
				refuses(outside)
				if p.Type == "[w, h] or int" {
					takes([]any{at, at})
					refuses([]any{outside, at})
					refuses([]any{at, outside})
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("%d constraints checked: the registry's params lost theirs", checked)
	}
}

// number is v as a value of a param of type typ.
func number(typ string, v float64) any {
	if typ == "float" {
		return v
	}
	return int64(v)
}

// just is the value of type typ next to v on side (+1: above, -1: below).
func just(typ string, v, side float64) any {
	if typ == "float" {
		return math.Nextafter(v, side*math.Inf(1))
	}
	return int64(v + side)
}

// TestLongClientStringsClipped: a name or value a client sent is quoted
// clipped (internal/clip) in the command's error, never whole.
func TestLongClientStringsClipped(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	reg := NewRegistry(DefaultLimits(), nil)
	for _, c := range []Command{
		{Op: long},
		{Op: "fft_convolve", Params: json.RawMessage(`{"kernel": "` + long + `"}`)},
		{Op: "fft_convolve", Params: json.RawMessage(`{"output": "` + long + `"}`)},
		{Op: "fft_convolve", Params: json.RawMessage(`{"boundary": "` + long + `"}`)},
		{Op: "fft_convolve", Params: json.RawMessage(`{"` + long + `": 1}`)},
	} {
		_, err := reg.Prepare(c)
		if err == nil || len(err.Error()) > 1000 || !strings.Contains(err.Error(), "(100000 bytes)") {
			t.Errorf("%.40s...: error of %d bytes: %.300v", c.Params, len(fmt.Sprint(err)), err)
		}
	}
}
