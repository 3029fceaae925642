package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/pixelflight/pixelflight/sched"
)

// lane is one stream and what it keeps between batches: device and
// pinned host buffers (grown, never shrunk), FFT plans and kernel spectra.
type lane struct {
	s        stream
	bufs     [nbuf]devBuf
	hin      []byte // pinned: index tables, then the batch's pixels
	hout     []byte // pinned: the batch's results
	plans    []planEntry
	spectra  []spectrumEntry
	cascades []cascadeEntry
	jpeg     jpegDecoder // made on first use; nil with noJPEG when the device has none
	noJPEG   bool
	onDevice map[*sched.Item]devPtr // this batch's rows decoded on the device (bufDecoded)
}

const (
	bufIn = iota // index tables + pixels
	bufReal
	bufSpec
	bufOut
	bufKernel
	bufDecoded // JPEGs decoded on the device
	nbuf
)

type devBuf struct {
	p    devPtr
	size int
}

type planEntry struct {
	nh, nw, batch int
	p             fftPlan
}

type spectrumEntry struct {
	key    string
	nh, nw int
	p      devPtr
}

const (
	maxPlans   = 12
	maxSpectra = 8
)

func (l *lane) close() error {
	var errs []error
	unbind, err := l.s.bind()
	if err != nil {
		return err
	}
	defer unbind()
	for _, p := range l.plans {
		errs = append(errs, p.p.destroy())
	}
	for _, s := range l.spectra {
		errs = append(errs, l.s.free(s.p))
	}
	for _, c := range l.cascades {
		errs = append(errs, l.s.free(c.p))
	}
	if l.jpeg != nil {
		errs = append(errs, l.jpeg.close())
		l.jpeg = nil
	}
	for _, b := range l.bufs {
		if b.size > 0 {
			errs = append(errs, l.s.free(b.p))
		}
	}
	for _, h := range [][]byte{l.hin, l.hout} {
		if h != nil {
			errs = append(errs, l.s.hostFree(h))
		}
	}
	l.plans, l.spectra, l.cascades, l.bufs, l.hin, l.hout = nil, nil, nil, [nbuf]devBuf{}, nil, nil
	errs = append(errs, l.s.close())
	return errors.Join(errs...)
}

// buf returns device buffer i with room for n bytes.
func (l *lane) buf(i, n int) (devPtr, error) {
	b := &l.bufs[i]
	if b.size >= n {
		return b.p, nil
	}
	if b.size > 0 {
		if err := l.s.free(b.p); err != nil {
			return 0, err
		}
		*b = devBuf{}
	}
	size := (n + 1<<20 - 1) &^ (1<<20 - 1)
	p, err := l.s.alloc(size)
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", size, err)
	}
	*b = devBuf{p, size}
	return p, nil
}

// uploadIn copies a batch's input to din: hin's first off bytes (the
// tables), then the pixels from off on, plane bytes per image in idx's
// order: within the device for the rows decoded there (decodeJPEGs),
// straight from the pinned buffers the decode stage decoded them into
// (sched.Stager), else through hin, at the same offsets.
func (b *Backend) uploadIn(l *lane, din devPtr, hin []byte, off, plane int, items []*sched.Item, idx []int) error {
	if err := l.s.upload(din, hin[:off]); err != nil {
		return err
	}
	for j, i := range idx {
		if src, ok := l.onDevice[items[i]]; ok {
			if err := l.s.copy(din+devPtr(off+j*plane), src, plane); err != nil {
				return err
			}
			continue
		}
		at, px := off+j*plane, items[i].Gray.Pix[:plane]
		if !items[i].Staged(b) {
			px = hin[at : at+plane]
			copy(px, items[i].Gray.Pix)
		}
		if err := l.s.upload(din+devPtr(at), px); err != nil {
			return err
		}
	}
	return nil
}

// host returns the pinned buffer *h with room for n bytes.
func (l *lane) host(h *[]byte, n int) ([]byte, error) {
	if len(*h) >= n {
		return *h, nil
	}
	if *h != nil {
		if err := l.s.hostFree(*h); err != nil {
			return nil, err
		}
		*h = nil
	}
	b, err := l.s.hostAlloc((n + 1<<20 - 1) &^ (1<<20 - 1))
	if err != nil {
		return nil, fmt.Errorf("cuda: pinning %d bytes: %w", n, err)
	}
	*h = b
	return b, nil
}

// plan returns a plan for batch transforms of nh×nw, the most recently
// used first.
func (l *lane) plan(nh, nw, batch int) (fftPlan, error) {
	for i, e := range l.plans {
		if e.nh == nh && e.nw == nw && e.batch == batch {
			copy(l.plans[1:i+1], l.plans[:i])
			l.plans[0] = e
			return e.p, nil
		}
	}
	p, err := l.s.plan(nh, nw, batch)
	if err != nil {
		return nil, fmt.Errorf("cuda: fft plan %dx%d batch %d: %w", nh, nw, batch, err)
	}
	if len(l.plans) >= maxPlans {
		last := l.plans[len(l.plans)-1]
		l.plans = l.plans[:len(l.plans)-1]
		if err := last.p.destroy(); err != nil {
			return nil, err
		}
	}
	l.plans = append([]planEntry{{nh, nw, batch, p}}, l.plans...)
	return p, nil
}

// spectrum returns the kernel's transform for nh×nw on the device,
// computed once per lane and kept (the most recent maxSpectra).
func (l *lane) spectrum(s *convSpec, nh, nw int) (devPtr, error) {
	for i, e := range l.spectra {
		if e.key == s.key && e.nh == nh && e.nw == nw {
			copy(l.spectra[1:i+1], l.spectra[:i])
			l.spectra[0] = e
			return e.p, nil
		}
	}
	folded := foldKernel(s.Kernel, nh, nw)
	in, err := l.buf(bufKernel, 4*len(folded))
	if err != nil {
		return 0, err
	}
	out, err := l.s.alloc(nh * (nw/2 + 1) * 8)
	if err != nil {
		return 0, fmt.Errorf("cuda: kernel spectrum: %w", err)
	}
	p, err := l.plan(nh, nw, 1)
	if err == nil {
		err = l.s.upload(in, float32Bytes(folded))
	}
	if err == nil {
		err = p.forward(in, out)
	}
	if err == nil {
		err = l.s.sync() // folded is Go memory: the copy must be done
	}
	if err != nil {
		return 0, errors.Join(err, l.s.free(out))
	}
	if len(l.spectra) >= maxSpectra {
		last := l.spectra[len(l.spectra)-1]
		l.spectra = l.spectra[:len(l.spectra)-1]
		if err := l.s.free(last.p); err != nil {
			return 0, err
		}
	}
	l.spectra = append([]spectrumEntry{{s.key, nh, nw, out}}, l.spectra...)
	return out, nil
}

func float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
