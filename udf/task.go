package udf

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pixelflight/pixelflight/imageio"
)

// Task is a validated call of an op, ready to run over rows. It is
// immutable and may be shared by goroutines.
type Task struct {
	Op string
	// Key is the op and its params as parsed: the same for equal calls
	// (whatever their JSON spelling), different for others, so rows of
	// different streams may share a batch.
	Key string
	// Spec is the call: what it computes and returns (Spec's methods).
	Spec   Spec
	Schema *arrow.Schema // Spec.Schema(): the result columns, the last one "error"
	limits Limits
}

// Header is what the header of a row to decode for t gives, within the
// server's limits: for encoded bytes its format and size (hdr for
// DecodeInto), for a Spark image struct its size alone. ok is false when
// the header does not give it (DecodeInto then says why, or finds the
// size itself).
func (t *Task) Header(in Input) (hdr imageio.Info, ok bool) {
	if t.Spec.Decode() == DecodeNone || in.Null {
		return hdr, false
	}
	if im := in.Image; im != nil {
		info, err := imageio.SparkImageInfo(im.Height, im.Width, im.NChannels, im.Mode, im.Data)
		if err != nil {
			return hdr, false
		}
		hdr.W, hdr.H = info.W, info.H
	} else {
		info, err := imageio.DecodeInfo(in.Bytes)
		if err != nil {
			return hdr, false
		}
		hdr = info
	}
	if hdr.W <= 0 || hdr.H <= 0 || int64(hdr.W)*int64(hdr.H) > t.limits.MaxPixels {
		return imageio.Info{}, false
	}
	return hdr, true
}

// Refused reports whether the decode of a row whose Header is hdr will
// refuse it before allocating (imageio.CheckHeader: data too short for the
// header, too many JPEG scans), so that its own error, not the memory its
// claimed size would need, is the row's.
func (t *Task) Refused(in Input, hdr imageio.Info) bool {
	return in.Image == nil && imageio.CheckHeader(in.Bytes, hdr, imageio.Limits{MaxPixels: t.limits.MaxPixels}) != nil
}

// Need is what a row of w×h pixels takes of the memory budget at its
// peak: its Spec's bytes per pixel (PerPixel) for every pixel and a fixed
// cost.
func (t *Task) Need(w, h int) int64 { return t.Spec.PerPixel(w, h)*int64(w)*int64(h) + rowFixed }

// DecodeInto decodes a row for t into dst (reusing dst.Pix): 8-bit
// grayscale within the server's limits, for a task that decodes
// (t.Spec.Decode() is not DecodeNone). hdr is the row's header from Header, or the
// zero Info to read it here. A bad image is the error; a panic becomes an
// error wrapping ErrInternal.
func (t *Task) DecodeInto(in Input, hdr imageio.Info, dst *imageio.Gray) (err error) {
	defer recoverRow(&err)
	defer func() {
		if errors.Is(err, imageio.ErrTooLarge) {
			err = fmt.Errorf("%w (raise serve's --max-pixels above the image's pixels; under the Spark executor plugin, in spark.pixelflight.args, as \"--max-pixels=N\")", err)
		}
	}()
	lim := imageio.Limits{MaxPixels: t.limits.MaxPixels}
	switch {
	case in.Null:
		return ErrNullRow
	case in.Image != nil:
		im := in.Image
		return imageio.SparkImageGray(im.Height, im.Width, im.NChannels, im.Mode, im.Data, lim, dst)
	case hdr.Format != "":
		return imageio.DecodeGrayInfo(in.Bytes, hdr, lim, dst)
	}
	return imageio.DecodeGray(in.Bytes, lim, dst)
}

// Compute runs t's computation on one row with w: on g, the row decoded
// by DecodeInto (nil for a task that does not decode). The row may be an
// Encoder, whose encoding is still to be done. A panic becomes the row's
// error (wrapping ErrInternal).
func (t *Task) Compute(w *Worker, in Input, g *imageio.Gray) (row Row, err error) {
	defer recoverRow(&err)
	if in.Null {
		return nil, ErrNullRow
	}
	return t.Spec.Compute(w, in, g)
}

// OnDevice reports whether a device backend may run t (its Spec is a
// DeviceSpec).
func (t *Task) OnDevice() bool {
	_, ok := t.Spec.(DeviceSpec)
	return ok
}

// RunOn runs t on device d: d's method for t's op. It fails for a call
// no device runs.
func (t *Task) RunOn(d Device) error {
	s, ok := t.Spec.(DeviceSpec)
	if !ok {
		return fmt.Errorf("%s runs on the CPU only", t.Op)
	}
	return s.RunOn(d)
}

// Run is the whole op on one row with w, on the CPU: decode, compute,
// encode.
func (t *Task) Run(w *Worker, in Input) (Row, error) {
	var g *imageio.Gray
	if t.Spec.Decode() != DecodeNone {
		g = new(imageio.Gray)
		if err := t.DecodeInto(in, imageio.Info{}, g); err != nil {
			return nil, err
		}
	}
	r, err := t.Compute(w, in, g)
	if err != nil {
		return nil, err
	}
	return Encode(r)
}
