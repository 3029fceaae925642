package sched

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pixelflight/pixelflight/imageio"
)

// jpegs reads imageio's test JPEGs: baseline, progressive, restart
// intervals, gray and CMYK, and a truncated one.
func jpegs(t *testing.T) (rows [][]byte, names []string) {
	t.Helper()
	files, err := filepath.Glob("../imageio/testdata/jpeg/*.jpg")
	if err != nil || len(files) < 5 {
		t.Fatalf("test JPEGs: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rows, names = append(rows, b), append(names, filepath.Base(f))
	}
	cut := rows[0][:len(rows[0])/3]
	return append(rows, cut), append(names, "truncated")
}

// TestDeviceDecode: JPEG rows through a CPU lane and a Sim that decodes
// JPEGs itself (its stand-in refuses progressive ones, as the hardware
// engine does). Every row comes back in its place; each good image's
// result is the shape its header gives; the truncated one is an error in
// its own row from the host decoder; the Sim decoded rows itself and gave
// back those it refused; fast and slow device decoders get shares by
// their measured rates.
func TestDeviceDecode(t *testing.T) {
	rows, names := jpegs(t)
	task := convolve(t, `{"output":"stats"}`)
	for _, c := range []struct {
		name   string
		decode time.Duration // the device's time per 512² JPEG
		share  func(float64) bool
	}{
		{"fast decoder", 10 * time.Microsecond, func(s float64) bool { return s > 0.6 }},
		// The rows given out before a side has its first time go evenly
		// (share 0.5 then), more of them the slower the host (0.21 under
		// -race on a busy machine with 96 rows): the bound is under half,
		// with 192 rows.
		{"slow decoder", 500 * time.Millisecond, func(s float64) bool { return s < 0.3 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := sim(1, 4, 10*time.Microsecond, 512, 512)
			dev.rates.DecodeJPEG = c.decode
			s := New(Config{Backends: []Backend{NewCPU(1), dev}, MaxDelay: time.Millisecond, Cores: 2})
			defer s.Close()
			var in [][]byte
			for range 24 {
				in = append(in, rows...)
			}
			b, err := s.Submit(context.Background(), task, column(t, in))
			if err != nil {
				t.Fatal(err)
			}
			wait(t, b)
			_, errs, by := b.Results()
			for i, err := range errs {
				name := names[i%len(names)]
				switch {
				case name == "truncated":
					if !errors.Is(err, imageio.ErrCorrupt) && !errors.Is(err, imageio.ErrTruncated) {
						t.Errorf("row %d (%s): %v, want the host decoder's error", i, name, err)
					}
				case err != nil:
					t.Errorf("row %d (%s): %v", i, name, err)
				}
			}
			st := s.Stats()
			sim := st.Backends[1]
			if sim.Decoded == 0 || sim.Declined == 0 || !c.share(sim.DecodeShare) {
				t.Errorf("the sim decoded %d rows, gave back %d, share %.2f", sim.Decoded, sim.Declined, sim.DecodeShare)
			}
			if got := st.Decode.Rows + sim.Decoded; got != int64(len(in)) { // what it gave back, the host decoded
				t.Errorf("decoded %d on the host and %d on the device (%d given back): want each of %d rows once",
					st.Decode.Rows, sim.Decoded, sim.Declined, len(in))
			}
			t.Logf("rows by backend %v; host decoded %d, device %d (share %.2f), given back %d",
				by, st.Decode.Rows, sim.Decoded, sim.DecodeShare, sim.Declined)
		})
	}
}

// failingDecoder is a Sim that decodes JPEGs and fails its first batch.
type failingDecoder struct {
	*Sim
	runs atomic.Int32
}

func (f *failingDecoder) Run(ctx context.Context, lane int, items []*Item) error {
	if f.runs.Add(1) == 1 {
		return errors.New("device lost")
	}
	return f.Sim.Run(ctx, lane, items)
}

// TestDeviceDecoderFails: when a device decoder fails a batch, its rows
// still undecoded (of the batch and queued) go to the host decoders and
// the CPU: every row comes back, none twice.
func TestDeviceDecoderFails(t *testing.T) {
	rows, names := jpegs(t)
	dev := &failingDecoder{Sim: sim(1, 2, time.Millisecond, 512, 512)}
	dev.rates.DecodeJPEG = time.Microsecond
	s := New(Config{Backends: []Backend{NewCPU(1), dev}, MaxDelay: time.Millisecond, Cores: 1})
	defer s.Close()
	var in [][]byte
	for range 6 {
		in = append(in, rows...)
	}
	b, err := s.Submit(context.Background(), convolve(t, `{"output":"stats"}`), column(t, in))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	out, errs, by := b.Results()
	for i, err := range errs {
		if bad := names[i%len(names)] == "truncated"; bad != (err != nil) || !bad && out[i] == nil {
			t.Errorf("row %d (%s): %v", i, names[i%len(names)], err)
		}
	}
	if by["cpu"]+by["decode"] != len(in) {
		t.Errorf("rows by backend %v, want all %d on the CPU or failed in the decode", by, len(in))
	}
}

// TestTwoDeviceDecoders: with two GPUs that decode JPEGs, both decode rows
// and both compute: every lent GPU is used.
func TestTwoDeviceDecoders(t *testing.T) {
	rows, _ := jpegs(t)
	var devs []*Sim
	for range 2 {
		d := sim(1, 4, 100*time.Microsecond, 512, 512)
		d.rates.DecodeJPEG = 10 * time.Microsecond
		devs = append(devs, d)
	}
	s := New(Config{Backends: []Backend{NewCPU(1), devs[0], devs[1]}, MaxDelay: time.Millisecond, Cores: 2})
	defer s.Close()
	var in [][]byte
	for range 16 {
		in = append(in, rows...)
	}
	b, err := s.Submit(context.Background(), convolve(t, `{"output":"stats"}`), column(t, in))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, b)
	st := s.Stats()
	for _, i := range []int{1, 2} {
		if g := st.Backends[i]; g.Decoded == 0 || g.Rows == 0 {
			t.Errorf("device %d decoded %d rows and ran %d", i, g.Decoded, g.Rows)
		}
	}
	if a, b := st.Backends[1].DecodeShare, st.Backends[2].DecodeShare; a+b < 0.5 || a < (a+b)/4 || b < (a+b)/4 {
		t.Errorf("the devices' shares of the decoding: %.2f and %.2f; want them alike, and most of it between them", a, b)
	}
}

// TestDecodeSplit: the rows go to the host and the devices in proportion
// to their measured rates, taken together: a host decoder and two devices
// of one lane, all equally fast, get a third each.
func TestDecodeSplit(t *testing.T) {
	d := newDecodeSplit()
	d.observeHost(1, time.Millisecond)
	d.observeDevice(1, 1, time.Millisecond)
	d.observeDevice(2, 1, time.Millisecond)
	got := map[int]int{}
	for range 3000 {
		got[d.choose(1, side{-1, 1}, []side{{1, 1}, {2, 1}})]++
	}
	for _, bi := range []int{-1, 1, 2} {
		if got[bi] != 1000 {
			t.Errorf("rows by side %v, want 1000 each", got)
			break
		}
	}
	if s := d.share(1); math.Abs(s-1.0/3) > 1e-9 {
		t.Errorf("device 1's share %.3f, want 1/3", s)
	}
	// A device four times as fast takes four fifths against the host.
	d = newDecodeSplit()
	d.observeHost(1, 4*time.Millisecond)
	d.observeDevice(1, 1, time.Millisecond)
	dev := 0
	for range 1000 {
		if d.choose(1, side{-1, 1}, []side{{1, 1}}) == 1 {
			dev++
		}
	}
	if dev != 800 {
		t.Errorf("%d of 1000 rows to the device 4x as fast, want 800", dev)
	}
}

// TestPassOnToFailedDevice: a row chosen for a device that fails before
// the row is queued for it is decoded on the host instead, and comes
// back.
func TestPassOnToFailedDevice(t *testing.T) {
	rows, _ := jpegs(t)
	dev := sim(1, 4, time.Millisecond, 512, 512)
	dev.rates.DecodeJPEG = time.Microsecond
	s := New(Config{Backends: []Backend{NewCPU(1), dev}, Cores: 1})
	defer s.Close()
	task := convolve(t, `{"output":"stats"}`)
	col := column(t, rows[1:2])
	b := &Batch{items: make([]Item, 1), done: make(chan struct{}), progress: make(chan struct{}), stop: func() bool { return true }}
	b.left.Store(1)
	it := &b.items[0]
	*it = Item{Task: task, In: col.Row(0), ctx: context.Background(), key: key{task: task.Key}, batch: b}
	if _, ok := it.header(); !ok {
		t.Fatal("no header")
	}
	if err := s.fail(1, errors.New("device lost"), nil); err != nil {
		t.Fatal(err)
	}
	if s.passOn(it, 1) {
		t.Fatal("queued for a device out of service")
	}
	s.decodeHere(it, true) // as the decoder does then
	wait(t, b)
	if _, errs, by := b.Results(); errs[0] != nil || by["cpu"] != 1 {
		t.Errorf("the row: %v, ran on %v; want it decoded on the host and run on the CPU", errs[0], by)
	}
}

// TestGivenBackUnderTightBudget: with memory for about one row and one
// decoder, rows a device gives back undecoded (progressive JPEGs the sim
// refuses) are decoded at once, not queued behind a decoder waiting for
// the memory they hold: every row comes back, none by its deadline.
func TestGivenBackUnderTightBudget(t *testing.T) {
	data, err := os.ReadFile("../imageio/testdata/jpeg/astronaut-420-progressive.jpg")
	if err != nil {
		t.Fatal(err)
	}
	task := convolve(t, `{"output":"stats"}`)
	hdr, err := imageio.DecodeInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	dev := sim(1, 4, 100*time.Microsecond, 512, 512)
	dev.rates.DecodeJPEG = time.Microsecond
	b := NewBudget(task.Need(hdr.W, hdr.H) * 3 / 2)
	s := New(Config{Backends: []Backend{NewCPU(1), dev}, Budget: b, MaxDelay: time.Millisecond, Cores: 1})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	batch, err := s.Submit(ctx, task, column(t, [][]byte{data, data, data, data, data, data}))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, batch)
	_, errs, by := batch.Results()
	for i, err := range errs {
		if err != nil {
			t.Errorf("row %d: %v (rows by backend %v)", i, err, by)
		}
	}
	if st := s.Stats().Backends[1]; st.Declined == 0 {
		t.Errorf("the sim gave back no row: the test did not test it (rows by backend %v)", by)
	}
}
