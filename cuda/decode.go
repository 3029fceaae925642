package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// Decoding JPEGs on the device (sched.DeviceDecoder): where the device has
// a JPEG decoder (nvJPEG), the scheduler passes the backend JPEG rows
// undecoded, in the share of its decoder's and the host's measured rates.
// A lane decodes them first, in one batch, to their luma in device memory
// (bufDecoded), and the op's pipeline copies each image from there to
// where its input goes, within the device: the pixels never cross to the
// host. Per image, what the decoder refuses goes back to the host
// decoders (declined); a batch the decoder fails goes back whole, and the
// host's decoder finds which image is bad: its error is that row's.

// DecodesOnDevice takes JPEGs whose gray is their coded luma
// (imageio.JPEGLuma: not RGB-coded or CMYK ones), not progressive ones on
// the hardware engines, and only whole ones (ending in an EOI marker: a
// truncated JPEG is the host decoder's to report, since a GPU decoder may
// fill in what is missing without an error); for every call it runs
// whose Spec decodes to udf.DecodeGray (not annotated detect_faces,
// which draws on the host's pixels; the scheduler asks for no other).
func (b *Backend) DecodesOnDevice(t *udf.Task, in udf.Input, hdr imageio.Info) bool {
	if t.Spec.Decode() != udf.DecodeGray || b.jpeg.desc == "" || b.jpegDown.Load() != nil || hdr.Format != "jpeg" || hdr.W < 1 || hdr.H < 1 || !bytes.HasSuffix(in.Bytes, eoi) {
		return false
	}
	return imageio.JPEGLuma(in.Bytes) && !(b.jpeg.hardware && imageio.JPEGProgressive(in.Bytes))
}

var eoi = []byte{0xff, 0xd9}

// Decoder describes the device's JPEG decoder, or says why it has none
// (every image is then decoded on the host); ok says whether it has one.
func (b *Backend) Decoder() (desc string, ok bool) {
	switch {
	case b.jpeg.desc == "":
		return fmt.Sprintf("none: JPEGs are decoded on the host (%v)", b.jpegErr), false
	case b.jpegDown.Load() != nil:
		return fmt.Sprintf("%s; out of use: a lane's decoder could not start (%s), JPEGs are decoded on the host", b.jpeg.desc, b.jpegDown.Load()), true
	}
	return b.jpeg.desc, true
}

// decodeJPEGs decodes the undecoded rows idx of items (all h×w) on the
// lane's decoder into bufDecoded, and returns the rows to run: those
// already decoded and those it decoded. The rest it declines, for the
// host decoders: images its decoder refuses or a lane without room
// for them, and the whole batch when the decoder fails.
func (b *Backend) decodeJPEGs(l *lane, items []*sched.Item, idx []int, h, w int) ([]int, error) {
	clear(l.onDevice)
	var enc []int
	run := idx[:0:0]
	for _, i := range idx {
		if items[i].Encoded() {
			enc = append(enc, i)
		} else {
			run = append(run, i)
		}
	}
	if len(enc) == 0 {
		return idx, nil
	}
	plane := h * w
	if l.jpeg == nil && !l.noJPEG {
		dec, err := l.s.jpegDecoder()
		// A lane whose decoder cannot start leaves JPEGs to the host, and
		// so does the backend from then on (capabilities says why).
		if err != nil {
			dec = nil
			b.jpegDown.CompareAndSwap(nil, err.Error())
		}
		l.jpeg, l.noJPEG = dec, dec == nil
	}
	if l.jpeg == nil || int64(len(enc))*int64(plane) > b.cfg.LaneMemory/4 {
		b.toHost(items, enc)
		return run, nil
	}
	var jpegs [][]byte
	var ok, refused []int
	for _, i := range enc {
		if l.jpeg.supported(items[i].In.Bytes) {
			jpegs = append(jpegs, items[i].In.Bytes)
			ok = append(ok, i)
		} else {
			refused = append(refused, i)
		}
	}
	b.toHost(items, refused)
	if len(ok) == 0 {
		return run, nil
	}
	start := time.Now()
	dbuf, err := l.buf(bufDecoded, len(ok)*plane)
	if err != nil {
		return nil, err
	}
	dst, pitch := make([]devPtr, len(ok)), make([]int, len(ok))
	for j := range ok {
		dst[j], pitch[j] = dbuf+devPtr(j*plane), w
	}
	if err := l.s.sync(); err != nil { // nothing queued may run after the decoder's writes
		return nil, err
	}
	if err := l.jpeg.decode(jpegs, dst, pitch); errors.Is(err, errStream) {
		return nil, err // the device failed: the scheduler takes it out of service
	} else if err != nil { // which image is bad, the host's decoder says
		b.toHost(items, ok)
		return run, nil
	}
	took := time.Since(start) / time.Duration(len(ok))
	for j, i := range ok {
		l.onDevice[items[i]] = dst[j]
		items[i].Decode = took
		run = append(run, i)
	}
	return run, nil
}

// toHost declines undecoded rows: the scheduler has the host decode them.
func (b *Backend) toHost(items []*sched.Item, idx []int) {
	for _, i := range idx {
		items[i].Decline()
	}
}
