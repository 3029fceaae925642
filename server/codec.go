package server

import (
	"bytes"
	"fmt"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// receiveOptions make gRPC receive into buffers it does not clear. In
// grpc-go 1.83 the server's pool holds received frames, queued small
// frames merged into one, and each message's copy into one piece (the
// send side uses gRPC's own pool); each is written in full before it is
// read, and gRPC's default pool cleared them (1.4% of the server's CPU at
// 512² JPEGs, in a perf profile). TestUnclearedBuffersKeepRowsApart
// checks it end to end.
func receiveOptions() []grpc.ServerOption {
	p := &dirtyPool{}
	return []grpc.ServerOption{experimental.BufferPool(p),
		grpc.ForceServerCodecV2(codec{CodecV2: encoding.GetCodecV2("proto"), pool: p})}
}

// codec is gRPC's proto codec, with messages put in one piece in pool,
// and Flight's data messages read without copying their bodies again.
type codec struct {
	encoding.CodecV2
	pool mem.BufferPool
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if fd, ok := v.(*flight.FlightData); ok {
		// Arrow's arrays alias the body until the batch is released: a
		// buffer of its own, joined without clearing it first.
		pieces := make([][]byte, len(data))
		for i, b := range data {
			pieces[i] = b.ReadOnlyData()
		}
		return unmarshalFlightData(bytes.Join(pieces, nil), fd)
	}
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// dirtyPool is a mem.BufferPool of power-of-two buffers from 256 B to
// 256 MiB (the largest message by default) that hands them out as they
// were left; larger ones are not kept.
type dirtyPool struct {
	tiers [21]sync.Pool // 256 B << i
}

// tier is the index of the smallest tier that holds n bytes.
func tier(n int) int { return max(bits.Len(uint(n-1)), 8) - 8 }

func (p *dirtyPool) Get(n int) *[]byte {
	i := tier(n)
	if i >= len(p.tiers) {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[i].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 256<<i)
	return &b
}

func (p *dirtyPool) Put(b *[]byte) {
	c := cap(*b)
	if i := tier(c); i < len(p.tiers) && 256<<i == c {
		p.tiers[i].Put(b)
	}
}

// unmarshalFlightData is proto.Unmarshal of a FlightData message whose
// bytes fields alias b (protobuf's copies each: the body, a batch of
// images, was copied twice per message). Unknown fields are dropped.
func unmarshalFlightData(b []byte, m *flight.FlightData) error {
	m.Reset()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("FlightData: %w", protowire.ParseError(n))
		}
		if !num.IsValid() {
			return fmt.Errorf("FlightData: field number %d out of range", num)
		}
		b = b[n:]
		if typ != protowire.BytesType || num > 3 && num != 1000 {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return fmt.Errorf("FlightData field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("FlightData field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1:
			if m.FlightDescriptor == nil {
				m.FlightDescriptor = new(flight.FlightDescriptor)
			}
			if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(v, m.FlightDescriptor); err != nil {
				return fmt.Errorf("FlightData descriptor: %w", err)
			}
		case 2:
			m.DataHeader = v
		case 3:
			m.AppMetadata = v
		case 1000:
			m.DataBody = v
		}
	}
	return nil
}
