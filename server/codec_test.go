package server

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

func TestDirtyPoolSizes(t *testing.T) {
	p := &dirtyPool{}
	for _, c := range []struct{ n, cap int }{{1, 256}, {256, 256}, {257, 512}, {16 << 10, 16 << 10},
		{2<<20 + 1, 4 << 20}, {256 << 20, 256 << 20}, {256<<20 + 1, 256<<20 + 1}} {
		b := p.Get(c.n)
		if len(*b) != c.n || cap(*b) != c.cap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", c.n, len(*b), cap(*b), c.n, c.cap)
		}
		p.Put(b)
	}
}

// A message received in several frames comes out of the codec whole,
// Flight's data messages (read apart) and others alike.
func TestCodecUnmarshalsPieces(t *testing.T) {
	c := codec{CodecV2: encoding.GetCodecV2("proto"), pool: &dirtyPool{}}
	for _, want := range []proto.Message{
		&flight.FlightData{DataHeader: []byte("header"), AppMetadata: []byte("meta"),
			DataBody:         bytes.Repeat([]byte("0123456789"), 10_000),
			FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"op":"echo"}`)}},
		&flight.Action{Type: "stats", Body: bytes.Repeat([]byte("x"), 70_000)},
	} {
		b, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, cut := range [][]int{{}, {3}, {7, 16 << 10, 50_000}} {
			var data mem.BufferSlice
			from := 0
			for _, to := range append(cut, len(b)) {
				data = append(data, mem.SliceBuffer(b[from:to]))
				from = to
			}
			got := want.ProtoReflect().New().Interface()
			if err := c.Unmarshal(data, got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("%T cut at %v: the message changed", want, cut)
			}
		}
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, new(int)); err == nil {
			t.Error("a value that is not a message unmarshalled")
		}
	}
}

// unmarshalFlightData reads what protobuf reads, and fails where it fails
// (unknown fields aside, which it drops).
func FuzzUnmarshalFlightData(f *testing.F) {
	full, _ := proto.Marshal(&flight.FlightData{DataHeader: []byte("h"), AppMetadata: []byte("m"), DataBody: []byte("body"),
		FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"a", "b"}}})
	for _, seed := range [][]byte{nil, full, full[:len(full)-1], {0x08, 0x01}, {0xc2, 0x3e, 0x02, 'h', 'i'},
		{0x0b, 0x0c}, {0x12, 0x80}, {0x0a, 0x02, 0x08, 0x07}, {0x00}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want, got flight.FlightData
		werr := proto.Unmarshal(b, &want)
		gerr := unmarshalFlightData(b, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("protobuf: %v; ours: %v", werr, gerr)
		}
		want.ProtoReflect().SetUnknown(nil)
		if werr == nil && !proto.Equal(&got, &want) {
			t.Fatalf("read %v, protobuf read %v", &got, &want)
		}
	})
}

// The body of a Flight data message is read in place: its bytes are
// copied once, out of gRPC's frames, and no more.
func TestFlightDataBodyReadInPlace(t *testing.T) {
	b, err := proto.Marshal(&flight.FlightData{DataHeader: []byte("header"), DataBody: make([]byte, 1<<20)})
	if err != nil {
		t.Fatal(err)
	}
	var got flight.FlightData
	if err := unmarshalFlightData(b, &got); err != nil {
		t.Fatal(err)
	}
	if &got.DataBody[0] != &b[len(b)-len(got.DataBody)] {
		t.Error("the body was copied")
	}
	// Through the codec: header and body are pieces of one buffer.
	c := codec{CodecV2: encoding.GetCodecV2("proto"), pool: &dirtyPool{}}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b[:1000]), mem.SliceBuffer(b[1000:])}, &got); err != nil {
		t.Fatal(err)
	}
	h := got.DataHeader[:cap(got.DataHeader)]
	if &h[len(h)-1] != &got.DataBody[len(got.DataBody)-1] {
		t.Error("the codec copied the body out of the message")
	}
}

// Streams at once, rows from one byte to 1 MiB (messages of a few MiB,
// the client's limit being 4): every row comes back as it was sent,
// whatever a reused, uncleared buffer held before.
func TestUnclearedBuffersKeepRowsApart(t *testing.T) {
	f := start(t, "grpc://127.0.0.1:0")
	mem := memory.NewGoAllocator()
	var wg sync.WaitGroup
	for stream := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(stream), 1))
			var rows [][]byte
			for b := range 4 {
				n := []int{1, 5 << 10, 300 << 10, 1 << 20}[(stream+b)%4]
				row := make([]byte, n)
				for i := range row {
					row[i] = byte(rng.Uint32())
				}
				rows = append(rows, row, row[:n/2+1], row[n/3:])
			}
			rec := imageBatch(mem, "content", rows...)
			defer rec.Release()
			out, err := exchange(t, f.client, `{"op": "echo"}`, rec)
			if err != nil || len(out) != 1 {
				t.Errorf("stream %d: %d batches, %v", stream, len(out), err)
				return
			}
			defer out[0].Release()
			got := out[0].Column(0).(*array.Binary)
			for i, want := range rows {
				if !bytes.Equal(got.Value(i), want) {
					t.Errorf("stream %d row %d: %d bytes back, not the %d sent", stream, i, len(got.Value(i)), len(want))
				}
			}
		})
	}
	wg.Wait()
}
