package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/pixelflight/pixelflight/kernels/blob"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// detect_blobs on the GPU: the scale space (-sigma²·LoG per scale) and
// its 3×3×3 maxima on the device (kernels.cu.h: pf_blob_y, pf_blob_x,
// pf_blob_first, pf_blob_peaks); the peaks come back, and the host sorts
// and prunes them with package blob's own code. The rows are the CPU's:
// scales the CPU sums directly are computed bit for bit; for the others
// (kernel radius >= 24, which the CPU filters in the DCT domain) the
// responses agree within blobTol, and an image where any decision (a
// threshold, a neighbour, the order of two peaks) falls within it is
// declined, for the CPU.

// blobTol bounds |GPU - CPU| for a response of a scale that is not
// Exact: both are float64 sums of the same ~1e3 terms of at most 1 (the
// image is 0..1), in different orders, so they differ by ~1e-15 (the
// tests measure it); 1e-10 leaves a wide margin.
const blobTol = 1e-10

// blobsSpec is a detect_blobs call the backend runs.
type blobsSpec struct {
	spec   *udf.BlobsSpec
	p      blob.Params
	scales []blob.Scale
	sigmas []float64
	tol    []float64 // per scale: 0 where Exact, else blobTol
}

func newBlobsSpec(spec *udf.BlobsSpec) *blobsSpec {
	s := &blobsSpec{spec: spec, p: spec.Params, scales: spec.Scales}
	for _, sc := range s.scales {
		s.sigmas = append(s.sigmas, sc.Sigma)
		s.tol = append(s.tol, map[bool]float64{true: 0, false: blobTol}[sc.Exact])
	}
	return s
}

// Per image, pf_blob_peaks' counters (PF_BLOB_WORDS uint32: hits, varied,
// unsure, full) and hit records (struct pf_blob_hit).
const (
	blobWords   = 4
	blobHitSize = 24
)

// blobCap is the room for peaks per image: a quarter of its pixels (a
// 3×3×3 maximum takes ~1/27 of the cube but plateaus may take more; an
// image with more runs on the CPU).
func blobCap(h, w int) int { return h*w/4 + 64 }

// blobBytesPerImage is the device memory of one h×w image: its pixels,
// the y pass' two layers, three responses, and its peaks.
func blobBytesPerImage(h, w int) int64 {
	return int64(h*w)*(1+16+24) + 8 + 4*blobWords + blobHitSize*int64(blobCap(h, w))
}

// detectBlobs runs the rows idx of items, all h×w, in parts that fit the
// lane's memory.
func (b *Backend) detectBlobs(l *lane, s *blobsSpec, items []*sched.Item, idx []int, h, w int) error {
	taps := 0 // the scales' taps and tolerances, once per batch
	for _, sc := range s.scales {
		taps += 16*len(sc.K0) + 8
	}
	fit := int((b.cfg.LaneMemory - int64(taps) - 1024) / blobBytesPerImage(h, w))
	if fit < 1 || h > maxGridYZ {
		b.decline(items, idx)
		return nil
	}
	fit = min(fit, b.cfg.MaxBatch)
	for len(idx) > 0 {
		n := min(len(idx), fit)
		if err := b.blobsPart(l, s, items, idx[:n], h, w); err != nil {
			return err
		}
		idx = idx[n:]
	}
	return nil
}

// blobsPart finds the blobs of up to fit images of one shape on the
// device.
func (b *Backend) blobsPart(l *lane, s *blobsSpec, items []*sched.Item, idx []int, h, w int) error {
	start := time.Now()
	n, plane, ns, hitCap := len(idx), h*w, len(s.scales), blobCap(h, w)
	// In: the counters (zero), each scale's taps (k0 then k2), the
	// tolerances, the pixels.
	align := func(v int) int { return (v + 255) &^ 255 }
	tapOff := make([]int, ns)
	off := align(4 * blobWords * n)
	for k, sc := range s.scales {
		tapOff[k] = off
		off += 16 * len(sc.K0)
	}
	tolOff := off
	pixOff := align(tolOff + 8*ns)
	inBytes := pixOff + n*plane
	hin, err := l.host(&l.hin, inBytes)
	if err != nil {
		return err
	}
	clear(hin[:tapOff[0]])
	putF := func(at int, v []float64) {
		for i, x := range v {
			binary.LittleEndian.PutUint64(hin[at+8*i:], math.Float64bits(x))
		}
	}
	for k, sc := range s.scales {
		putF(tapOff[k], sc.K0)
		putF(tapOff[k]+8*len(sc.K0), sc.K2)
	}
	putF(tolOff, s.tol)
	din, err := l.buf(bufIn, inBytes)
	if err != nil {
		return err
	}
	dab, err := l.buf(bufReal, 2*8*n*plane) // the y pass: a, then b
	if err != nil {
		return err
	}
	ringBytes := 8 * n * plane
	dring, err := l.buf(bufSpec, 3*ringBytes+8*n) // three responses, then first
	if err != nil {
		return err
	}
	dhits, err := l.buf(bufOut, blobHitSize*n*hitCap)
	if err != nil {
		return err
	}
	if err := b.uploadIn(l, din, hin, pixOff, plane, items, idx); err != nil {
		return err
	}
	ring := func(k int) uint64 { return dring.at((k % 3) * ringBytes) }
	first := dring.at(3 * ringBytes)
	grid, block := dim3{ceilDiv(w, blockX), h, n}, dim3{blockX, 1, 1}
	border := 0
	if s.p.ExcludeBorder {
		border = 1
	}
	for k := 0; k <= ns; k++ {
		if k < ns {
			sc := s.scales[k]
			r := len(sc.K0) - 1
			k0, k2 := din.at(tapOff[k]), din.at(tapOff[k]+8*len(sc.K0))
			if err := l.s.launch("pf_blob_y", grid, block, din.at(pixOff), dab.at(0), dab.at(8*n*plane), k0, k2, i64(h), i64(w), i64(r)); err != nil {
				return err
			}
			if err := l.s.launch("pf_blob_x", grid, block, dab.at(0), dab.at(8*n*plane), ring(k), k0, k2, i64(h), i64(w), i64(r),
				math.Float64bits(sc.Sigma*sc.Sigma)); err != nil {
				return err
			}
			if k == 0 {
				if err := l.s.launch("pf_blob_first", dim3{1, 1, n}, dim3{1, 1, 1}, ring(0), first, i64(h), i64(w)); err != nil {
					return err
				}
			}
		}
		if k == 0 {
			continue
		}
		c := k - 1 // its neighbours: c-1 and c+1 where they exist
		prev, next := ring(max(c-1, 0)), ring(min(c+1, ns-1))
		if err := l.s.launch("pf_blob_peaks", grid, block, prev, ring(c), next, first, din.at(tolOff), din.at(0), dhits.at(0),
			i64(h), i64(w), i64(c), i64(ns), i64(hitCap), i64(border), math.Float64bits(s.p.Threshold)); err != nil {
			return err
		}
	}
	hout, err := l.host(&l.hout, 4*blobWords*n)
	if err != nil {
		return err
	}
	if err := l.s.download(hout[:4*blobWords*n], din); err != nil {
		return err
	}
	if err := l.s.sync(); err != nil {
		return err
	}
	counters := make([]uint32, blobWords*n)
	for i := range counters {
		counters[i] = binary.LittleEndian.Uint32(hout[4*i:])
	}
	// The sure images' peaks, packed into hout.
	at := make([]int, n+1)  // image j's hits: hout[at[j]:at[j+1]]
	redo := make([]bool, n) // images to redo on the CPU
	for j := range n {
		c := counters[blobWords*j:]
		at[j+1] = at[j]
		if c[1] == 0 || c[2] != 0 || c[3] != 0 {
			redo[j] = true // constant or unsure, or too many peaks
			continue
		}
		at[j+1] += blobHitSize * int(c[0])
	}
	if at[n] > 0 {
		if hout, err = l.host(&l.hout, at[n]); err != nil {
			return err
		}
		for j := range n {
			if at[j+1] > at[j] {
				if err := l.s.download(hout[at[j]:at[j+1]], dhits+devPtr(blobHitSize*j*hitCap)); err != nil {
					return err
				}
			}
		}
		if err := l.s.sync(); err != nil {
			return err
		}
	}
	kernel := time.Since(start) / time.Duration(n)

	peaks := make([][]blob.Peak, n)
	for j := range n {
		for q := hout[at[j]:at[j+1]]; len(q) > 0; q = q[blobHitSize:] {
			p := blob.Peak{
				V: math.Float64frombits(binary.LittleEndian.Uint64(q)),
				Y: int32(binary.LittleEndian.Uint32(q[8:])), X: int32(binary.LittleEndian.Uint32(q[12:])),
				K: int32(binary.LittleEndian.Uint32(q[16:])),
			}
			if p.Y < 0 || int(p.Y) >= h || p.X < 0 || int(p.X) >= w || p.K < 0 || int(p.K) >= ns {
				return fmt.Errorf("cuda: pf_blob_peaks wrote a peak at (%d, %d) of scale %d in a %dx%d image of %d scales", p.Y, p.X, p.K, h, w, ns)
			}
			peaks[j] = append(peaks[j], p)
		}
	}
images:
	for j := range n {
		if redo[j] {
			continue
		}
		peaks := peaks[j]
		blob.SortPeaks(peaks)
		for i := 1; i < len(peaks); i++ {
			// An order the responses' margins cannot tell: the CPU's.
			if e := 2 * (s.tol[peaks[i-1].K] + s.tol[peaks[i].K]); e > 0 && peaks[i-1].V-peaks[i].V <= e {
				redo[j] = true
				continue images
			}
		}
		it := items[idx[j]]
		it.Kernel = kernel
		it.Row, it.Err = udf.BlobsRow(blob.Prune(peaks, s.sigmas, s.p, s.spec.Memory(w, h, it.Grow)))
	}
	var cpu []int
	for j, i := range idx {
		if redo[j] {
			cpu = append(cpu, i)
		}
	}
	b.decline(items, cpu)
	return nil
}
