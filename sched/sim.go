package sched

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/kernels"
	"github.com/pixelflight/pixelflight/udf"
)

// SimRates is the device a Sim backend stands for.
type SimRates struct {
	// PerImage is the device time of one 512×512 image, by op; other sizes
	// scale with their pixels.
	PerImage map[string]time.Duration
	// Copy is the bytes per second of host-device copies, each way.
	Copy float64
	// DecodeJPEG is the device time to decode one 512×512 JPEG (other
	// sizes scale with their pixels); 0: the Sim decodes nothing.
	DecodeJPEG time.Duration
}

// DefaultSimRates are an H100's, from its one run (2026-11-24, the
// project's shared notes gpu/h100-2026-11-24.md; BENCHMARKS.md's GPU
// section): fft_convolve about 12 µs per 512² image (Nsight Compute:
// ~0.7 ms of device time per 64), detect_faces about 1 ms and
// detect_blobs about 2.3 ms (748 and 392 images/s with the SMs 75% and
// 90% busy); copies at about 20 GB/s (PCIe Gen5, not measured).
func DefaultSimRates() SimRates {
	return SimRates{
		PerImage: map[string]time.Duration{
			"fft_convolve": 12 * time.Microsecond,
			"detect_faces": time.Millisecond,
			"detect_blobs": 2300 * time.Microsecond,
		},
		Copy: 20e9,
	}
}

// Sim stands in for a GPU on machines without one, to measure the row
// path: it hands the decode stage its staging memory (Stager), as the
// CUDA backend hands pinned buffers; its lanes do a GPU lane's host work
// (pack the pixels of rows decoded elsewhere into a staging buffer,
// build the result rows) and wait out the device's time from SimRates,
// on one device shared by the lanes. Its rows have the right shape but
// hold no results (zeros, no detections): never point it at data you
// need.
type Sim struct {
	lanes, batch int
	rates        SimRates
	pool         *HostPool
	staging      [][]byte    // per lane
	zeros        [][]float32 // per lane

	mu   sync.Mutex
	free time.Time // when the device is next idle
}

// NewSim returns a Sim backend named "sim".
func NewSim(lanes, batch int, rates SimRates) *Sim {
	lanes = max(lanes, 1)
	return &Sim{lanes: lanes, batch: max(batch, 1), rates: rates,
		pool:    NewHostPool(func(n int) ([]byte, error) { return make([]byte, n), nil }, hostPoolMax),
		staging: make([][]byte, lanes), zeros: make([][]float32, lanes)}
}

// hostPoolMax bounds the staging memory a Sim hands out, as pinned memory
// is bounded on a GPU node.
const hostPoolMax = 512 << 20

func (s *Sim) HostBuffer(n int) []byte { return s.pool.Get(n) }
func (s *Sim) FreeHostBuffer(b []byte) { s.pool.Put(b) }

func (s *Sim) Name() string  { return "sim" }
func (s *Sim) Lanes() int    { return s.lanes }
func (s *Sim) MaxBatch() int { return s.batch }

// Accepts takes the ops the CUDA backend runs.
func (s *Sim) Accepts(t *udf.Task) bool { return t.OnDevice() }

// DecodesOnDevice: with SimRates.DecodeJPEG, baseline and extended
// JPEGs, as a GPU's hardware decoder (progressive ones it leaves to the
// host).
func (s *Sim) DecodesOnDevice(t *udf.Task, _ udf.Input, hdr imageio.Info) bool {
	return s.rates.DecodeJPEG > 0 && hdr.Format == "jpeg"
}

// decode stands in for a device decoder on the rows passed on undecoded:
// it decodes them on the host, declines those a hardware decoder refuses
// (progressive) or cannot decode, and returns the others and the device
// time their decoding takes.
func (s *Sim) decode(items []*Item) (run []*Item, dev time.Duration) {
	for _, it := range items {
		if !it.Encoded() {
			run = append(run, it)
			continue
		}
		g := new(imageio.Gray)
		if progressive(it.In.Bytes) || it.Task.DecodeInto(it.In, it.Header(), g) != nil {
			it.Decline()
			continue
		}
		it.Gray = g
		it.Decode = max(s.rates.DecodeJPEG*time.Duration(g.W*g.H)/(512*512), time.Nanosecond) // > 0: decoded here
		dev += it.Decode
		run = append(run, it)
	}
	return run, dev
}

// Decoder describes the JPEG decoder it stands for.
func (s *Sim) Decoder() (string, bool) {
	if s.rates.DecodeJPEG <= 0 {
		return "none: the sim decodes nothing (its decode_jpeg time is 0)", false
	}
	return fmt.Sprintf("sim: baseline JPEGs at %v per 512×512 image (the host's decoder stands in; no results)", s.rates.DecodeJPEG), true
}

// progressive reports whether a JPEG has a progressive frame (SOF2): a
// 0xFF 0xC2 pair can only be that marker outside APPn segments.
func progressive(b []byte) bool { return bytes.Contains(b, []byte{0xFF, 0xC2}) }

// Run packs the batch (decoding the rows passed on undecoded), builds the
// rows and waits for the device.
func (s *Sim) Run(ctx context.Context, lane int, items []*Item) error {
	var in, out int
	items, dev := s.decode(items)
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		if !it.Encoded() {
			in += len(it.Gray.Pix)
		}
	}
	buf := s.staging[lane]
	if cap(buf) < in {
		buf = make([]byte, in)
		s.staging[lane] = buf
	}
	buf = buf[:0]
	for _, it := range items {
		g := it.Gray
		if !it.Staged(s) && !it.Encoded() {
			buf = append(buf, g.Pix[:g.W*g.H]...)
		}
		dev += s.rates.PerImage[it.Task.Op] * time.Duration(g.W*g.H) / (512 * 512)
		r := simRow{s: s, lane: lane, it: it}
		if err := it.Task.RunOn(&r); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		out += 64 + r.out
	}
	if s.rates.Copy > 0 {
		dev += time.Duration(float64(in+out) / s.rates.Copy * float64(time.Second))
	}
	s.mu.Lock()
	end := time.Now()
	if end.Before(s.free) {
		end = s.free
	}
	end = end.Add(dev)
	s.free = end
	s.mu.Unlock()
	t := time.NewTimer(time.Until(end))
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		for _, it := range items {
			it.Row, it.Err = nil, nil
		}
		return ctx.Err()
	}
	kernel := dev / time.Duration(len(items))
	for _, it := range items {
		it.Kernel = kernel
	}
	return nil
}

// simRow is the udf.Device that makes one row's result: the shape of
// its op's, holding zeros or no detections, and the bytes a GPU would
// copy back for it (out: an output plane of float32 unless stats).
type simRow struct {
	s    *Sim
	lane int
	it   *Item
	out  int
}

func (r *simRow) Convolve(spec *udf.ConvolveSpec) error {
	g := r.it.Gray
	oh, ow, err := kernels.OutputSize(g.H, g.W, spec.Kernel, spec.Mode)
	if err != nil {
		r.it.Err = err
		return nil
	}
	if spec.Output == udf.OutputStats {
		r.it.Row = udf.StatsRow(0, 0, 0, 0)
		return nil
	}
	r.out = 4 * g.W * g.H
	zeros := r.s.zeros[r.lane]
	if len(zeros) < oh*ow {
		zeros = make([]float32, oh*ow)
		r.s.zeros[r.lane] = zeros
	}
	r.it.Row = spec.Row(zeros[:oh*ow], oh, ow)
	return nil
}

func (r *simRow) DetectFaces(spec *udf.FacesSpec) error {
	g := r.it.Gray
	r.it.Row = udf.FacesRow(nil, g.Pix, g.W, g.H, spec.Annotate)
	return nil
}

func (r *simRow) DetectBlobs(*udf.BlobsSpec) error {
	r.it.Row, r.it.Err = udf.BlobsRow(nil, nil)
	return nil
}
