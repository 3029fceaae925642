package server

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

func TestDirtyPoolSizes(t *testing.T) {
	p := &dirtyPool{}
	for _, c := range []struct{ n, cap int }{{1, 256}, {256, 256}, {257, 512}, {16 << 10, 16 << 10},
		{2<<20 + 1, 4 << 20}, {16 << 20, 16 << 20}, {16<<20 + 1, 16<<20 + 1}} {
		b := p.Get(c.n)
		if len(*b) != c.n || cap(*b) != c.cap {
			t.Errorf("Get(%d): len %d cap %d, want len %d cap %d", c.n, len(*b), cap(*b), c.n, c.cap)
		}
		p.Put(b)
	}
}

// A message received in several frames comes out of the codec whole.
func TestCodecUnmarshalsPieces(t *testing.T) {
	want := &flight.FlightData{DataHeader: []byte("header"), AppMetadata: []byte("meta"),
		DataBody: bytes.Repeat([]byte("0123456789"), 10_000)}
	b, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	c := codec{CodecV2: encoding.GetCodecV2("proto"), pool: &dirtyPool{}}
	for _, cut := range [][]int{{}, {3}, {7, 16 << 10, 50_000}} {
		var data mem.BufferSlice
		from := 0
		for _, to := range append(cut, len(b)) {
			data = append(data, mem.SliceBuffer(b[from:to]))
			from = to
		}
		var got flight.FlightData
		if err := c.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, want) {
			t.Errorf("cut at %v: the message changed", cut)
		}
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, new(int)); err == nil {
		t.Error("a value that is not a message unmarshalled")
	}
}
