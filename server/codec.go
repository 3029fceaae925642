package server

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
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

// codec is gRPC's proto codec, with messages put in one piece in pool.
type codec struct {
	encoding.CodecV2
	pool mem.BufferPool
}

func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
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
