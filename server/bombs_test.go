package server

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/image/bmp"
)

// Decompression bombs and lying headers, mixed with good rows in one
// batch: every good row comes back, each bad one with its own error, and
// the whole exchange allocates far less than any bomb asks for. (The
// same files, and more, at the imageio level: imageio TestBombs.)

// The builders below are small copies of imageio's test helpers
// (bombs_helpers_test.go), which another package's tests cannot reach.

func pngOf(w, h uint32, colorType byte, idat []byte) []byte {
	chunk := func(b []byte, typ string, data []byte) []byte {
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		c := append([]byte(typ), data...)
		return binary.BigEndian.AppendUint32(append(b, c...), crc32.ChecksumIEEE(c))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	b := chunk([]byte("\x89PNG\r\n\x1a\n"), "IHDR", append(ihdr, 8, colorType, 0, 0, 0))
	if idat != nil {
		b = chunk(b, "IDAT", idat)
	}
	return chunk(b, "IEND", nil)
}

// zlibZeros inflates to mib MiB of zeros from about 1 KiB per MiB.
func zlibZeros(mib int) []byte {
	var blk bytes.Buffer
	fw, _ := flate.NewWriter(&blk, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	fw.Write(zeros)
	fw.Flush()
	out := []byte{0x78, 0xda}
	for range mib {
		out = append(out, blk.Bytes()...)
	}
	// Adler-32 of n zeros: A stays 1, B adds A n times.
	return binary.BigEndian.AppendUint32(append(out, 0x03, 0x00), uint32(mib<<20%65521)<<16|1)
}

// tiffOf is a little-endian 8-bit gray TIFF; entries are tag -> LONG
// value, data follows the header and 273/324 (offsets) point at it.
func tiffOf(entries map[uint16]uint32, data []byte) []byte {
	tags := []uint16{258, 262, 277}
	for t := range entries {
		tags = append(tags, t)
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i] < tags[j] })
	b := binary.LittleEndian.AppendUint32([]byte("II*\x00"), uint32(8+len(data)+len(data)&1))
	b = append(b, data...)
	if len(data)&1 == 1 {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(tags)))
	for _, t := range tags {
		v := map[uint16]uint32{258: 8, 262: 1, 277: 1}[t]
		if e, ok := entries[t]; ok {
			v = e
		}
		switch t {
		case 273, 324:
			v = 8
		case 279, 325:
			v = uint32(len(data))
		}
		b = binary.LittleEndian.AppendUint16(b, t)
		b = binary.LittleEndian.AppendUint16(b, 4)
		b = binary.LittleEndian.AppendUint32(b, 1)
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, 0)
}

// progressiveJPEG: w x h gray, one DC scan, then acScans AC scans of
// end-of-band runs (a few bytes each, a pass over every block each).
func progressiveJPEG(w, h, acScans int) []byte {
	seg := func(b []byte, m byte, data []byte) []byte {
		b = binary.BigEndian.AppendUint16(append(b, 0xff, m), uint16(2+len(data)))
		return append(b, data...)
	}
	counts := make([]byte, 16)
	counts[0] = 1
	b := seg([]byte{0xff, 0xd8}, 0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...))
	b = seg(b, 0xc2, []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), 1, 1, 0x11, 0})
	b = seg(b, 0xc4, append(append([]byte{0x00}, counts...), 0x00))
	b = seg(b, 0xc4, append(append([]byte{0x10}, counts...), 0xe0))
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	b = seg(b, 0xda, []byte{1, 1, 0x00, 0, 0, 0x00})
	b = append(b, make([]byte, (blocks+7)/8)...) // a 1-bit "0" per block
	var ac []byte                                // runs of 32767 blocks: "0" then 14 ones, 15 bits
	var acc uint64
	var n uint
	for range (blocks + 32766) / 32767 {
		acc, n = acc<<15|0x3fff, n+15
		for n >= 8 {
			ac = append(ac, byte(acc>>(n-8)))
			if ac[len(ac)-1] == 0xff {
				ac = append(ac, 0)
			}
			n -= 8
		}
	}
	if n > 0 {
		ac = append(ac, byte(acc<<(8-n))|byte(0xff>>n))
		if ac[len(ac)-1] == 0xff {
			ac = append(ac, 0)
		}
	}
	for range acScans {
		b = append(seg(b, 0xda, []byte{1, 1, 0x00, 1, 63, 0x00}), ac...)
	}
	return append(b, 0xff, 0xd9)
}

func encodeWith(t testing.TB, enc func(*bytes.Buffer, image.Image) error, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := enc(&buf, m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func grayImage(w, h int) *image.Gray {
	m := image.NewGray(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = uint8(i * 13)
	}
	return m
}

type bombRow struct {
	name string
	b    []byte
	want string // in the row's error; "" for a good row
}

func bombRows(t testing.TB) []bombRow {
	good := pngBytes(t, 6, 5)
	jpg := encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return jpeg.Encode(b, m, nil) }, grayImage(16, 16))
	setJPEGSize := func(w, h int) []byte {
		b := bytes.Clone(jpg)
		i := bytes.Index(b, []byte{0xff, 0xc0})
		b[i+5], b[i+6], b[i+7], b[i+8] = byte(h>>8), byte(h), byte(w>>8), byte(w)
		return b
	}
	gf := encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, m, nil) },
		image.NewPaletted(image.Rect(0, 0, 4, 4), color.Palette{color.Black, color.White}))
	gifScreen := func(w, h uint16) []byte {
		b := bytes.Clone(gf)
		binary.LittleEndian.PutUint16(b[6:], w)
		binary.LittleEndian.PutUint16(b[8:], h)
		return b
	}
	bm := encodeWith(t, func(b *bytes.Buffer, m image.Image) error { return bmp.Encode(b, m) }, grayImage(4, 4))
	bmpSize := func(w, h int32) []byte {
		b := bytes.Clone(bm)
		binary.LittleEndian.PutUint32(b[18:], uint32(w))
		binary.LittleEndian.PutUint32(b[22:], uint32(h))
		return b
	}
	vp8l := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x05\x00\x00\x00\x2f")
	vp8l = binary.LittleEndian.AppendUint32(vp8l, 16383|16383<<14) // 16384x16384
	strip := func(w, h, rows, compression uint32, data []byte) []byte {
		return tiffOf(map[uint16]uint32{256: w, 257: h, 259: compression, 273: 0, 278: rows, 279: 0}, data)
	}
	// The sidecar's row error says which flag to raise, and where under the plugin.
	over := `over the limit of 100000000 (raise serve's --max-pixels above the image's pixels; under the Spark executor plugin, in spark.pixelflight.args, as "--max-pixels=N")`
	return []bombRow{
		{"good png", good, ""},
		{"png claims 100000x100000", pngOf(100000, 100000, 2, nil), "png header says 100000x100000 = 10000000000 pixels, " + over},
		{"png claims 100000x100000 over a zlib bomb", pngOf(100000, 100000, 0, zlibZeros(64)), "png header says 100000x100000"},
		{"png 64x64 whose data inflates to 256 MiB", pngOf(64, 64, 0, zlibZeros(256)), "too much pixel data"},
		{"png 0x5", pngOf(0, 5, 0, nil), "bad image dimensions: png header says 0x5"},
		{"png -1x5", pngOf(0xffffffff, 5, 0, nil), "bad image dimensions: png header says -1x5"},
		{"png cut short", good[:len(good)/2], "corrupt"},
		{"gif claims 65535x65535", gifScreen(65535, 65535), "gif header says 65535x65535 = 4294836225 pixels, " + over},
		{"gif 0x0", gifScreen(0, 0), "bad image dimensions: gif header says 0x0"},
		{"bmp claims 100000x100000", bmpSize(100000, 100000), "bmp header says 100000x100000"},
		{"bmp claims 100000x100000 top-down", bmpSize(100000, -100000), "bmp header says 100000x100000"},
		{"bmp 0x4", bmpSize(0, 4), "bad image dimensions"},
		{"tiff claims 100000x100000", strip(100000, 100000, 1, 1, []byte{0}), "tiff header says 100000x100000"},
		{"tiff 0x8", strip(0, 8, 8, 1, []byte{0}), "bad image dimensions"},
		{"tiff 64x64 deflate strip inflating to 256 MiB", strip(64, 64, 0xffffffff, 8, zlibZeros(256)), ""},
		{"tiff 64x64 PackBits unpacking to 128 MiB", strip(64, 64, 64, 32773, bytes.Repeat([]byte{0x81, 0}, 1<<20)), "PackBits block 0 unpacks to more than 32768 bytes"},
		{"tiff 16x16 in a 65536x65536 tile", tiffOf(map[uint16]uint32{256: 16, 257: 16, 259: 8, 322: 65536, 323: 65536, 324: 0, 325: 0}, zlibZeros(64)), "tiles of 65536x65536"},
		{"webp claims 16384x16384", vp8l, "webp header says 16384x16384 = 268435456 pixels, " + over},
		{"pgm claims 100000x100000", []byte("P5 100000 100000 255\n"), "pnm header says 100000x100000"},
		{"pgm claims 10000x10000, sends nothing", []byte("P5 10000 10000 255\n\x00"), "pnm raster truncated: need 100000000 bytes, have 1"},
		{"ppm 0x7", []byte("P6 0 7 255\n"), "bad image dimensions"},
		{"jpeg claims 65535x65535", setJPEGSize(65535, 65535), "jpeg header says 65535x65535"},
		{"jpeg 8192x8192 of 601 scans in 190 KB", progressiveJPEG(8192, 8192, 600), "jpeg has more than 100 scans"},
		{"jpeg 64x64 of 100 scans", progressiveJPEG(64, 64, 99), ""},
		{"jpeg cut short", jpg[:len(jpg)/2], "corrupt"},
		{"null", nil, "input row is null"},
		{"empty", []byte{}, "empty input"},
		{"not an image", []byte("GET / HTTP/1.1\r\n"), "unknown image format"},
		{"good jpeg", jpg, ""},
	}
}

func TestBombsInOneBatch(t *testing.T) {
	f := startWith(t, "grpc://127.0.0.1:0", Config{Workers: 2})
	mem := memory.NewGoAllocator()
	rows := bombRows(t)
	in := make([][]byte, len(rows))
	for i, r := range rows {
		in[i] = r.b
	}
	rec := imageBatch(mem, "content", in...)
	defer rec.Release()
	var out []arrow.RecordBatch
	var err error
	n := allocated(func() {
		out, err = exchange(t, f.client, `{"op": "fft_convolve", "params": {"kernel": "box", "output": "stats"}}`, rec)
	})
	if err != nil || len(out) != 1 {
		t.Fatalf("%d batches, %v", len(out), err)
	}
	defer out[0].Release()
	res := out[0]
	if res.NumRows() != int64(len(rows)) {
		t.Fatalf("%d rows back for %d", res.NumRows(), len(rows))
	}
	mean, errs := res.Column(2).(*array.Float64), res.Column(4).(*array.String)
	for i, r := range rows {
		switch {
		case r.want == "" && (errs.IsValid(i) || mean.IsNull(i)):
			t.Errorf("row %d (%s): error %q, want a result", i, r.name, errs.Value(i))
		case r.want != "" && (errs.IsNull(i) || mean.IsValid(i) || !strings.Contains(errs.Value(i), r.want)):
			t.Errorf("row %d (%s): error %q, want one with %q", i, r.name, errs.Value(i), r.want)
		}
	}
	// The bombs ask for GiBs (and the scans for a minute of CPU); the
	// exchange, client included, allocates a few times its 3 MB of input.
	if n > 64<<20 {
		t.Errorf("the exchange allocated %d MiB, want < 64 MiB", n>>20)
	}
	t.Logf("%d rows, %d MiB allocated in all", len(rows), n>>20)
	stillServes(t, f)
}

// Spark image structs that lie: every field is checked against the
// others before any pixel memory is taken.
func TestSparkStructLies(t *testing.T) {
	f := startWith(t, "grpc+unix://"+t.TempDir()+"/s.sock", Config{Workers: 2})
	mem := memory.NewGoAllocator()
	type row struct {
		name          string
		null          bool
		h, w, c, mode int32
		data          []byte // nil: null data
		want          string
	}
	rows := []row{
		{"good BGR 2x3", false, 2, 3, 3, 16, make([]byte, 18), ""},
		{"claims 2^31-1 x 2^31-1", false, 1<<31 - 1, 1<<31 - 1, 4, 24, []byte{1, 2, 3, 4}, "spark struct says 2147483647x2147483647 = 4611686014132420609 pixels, over the limit"},
		{"claims 10000x10000x3, sends 18 bytes", false, 10000, 10000, 3, 16, make([]byte, 18), "len(data) is 18, want 10000*10000*3 = 300000000"},
		{"height x width mismatch", false, 3, 2, 3, 16, make([]byte, 17), "len(data) is 17, want 3*2*3 = 18"},
		{"nChannels 3, mode CV_8UC4", false, 2, 3, 3, 24, make([]byte, 18), "nChannels 3 does not match mode 24"},
		{"mode CV_32FC1", false, 2, 3, 1, 5, make([]byte, 24), "mode 5 is not CV_8UC1"},
		{"nChannels 0", false, 2, 3, 0, 0, make([]byte, 6), "nChannels 0 does not match mode 0"},
		{"negative height", false, -2, 3, 3, 16, make([]byte, 18), "bad image dimensions: spark struct says 3x-2"},
		{"zero width", false, 2, 0, 1, 0, []byte{}, "bad image dimensions"},
		{"null struct", true, 0, 0, 0, 0, nil, "input row is null"},
		{"null data", false, 2, 3, 3, 16, nil, "input row is null"},
		{"good gray 1x1", false, 1, 1, 1, 0, []byte{7}, ""},
	}
	fields := []arrow.Field{
		{Name: "origin", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "height", Type: arrow.PrimitiveTypes.Int32},
		{Name: "width", Type: arrow.PrimitiveTypes.Int32},
		{Name: "nChannels", Type: arrow.PrimitiveTypes.Int32},
		{Name: "mode", Type: arrow.PrimitiveTypes.Int32},
		{Name: "data", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}
	sb := array.NewStructBuilder(mem, arrow.StructOf(fields...))
	defer sb.Release()
	for _, r := range rows {
		sb.Append(!r.null)
		if r.null {
			continue // Append(false) appended a null to every field
		}
		sb.FieldBuilder(0).(*array.StringBuilder).Append("file:/x/" + r.name)
		for i, v := range []int32{r.h, r.w, r.c, r.mode} {
			sb.FieldBuilder(1 + i).(*array.Int32Builder).Append(v)
		}
		if r.data == nil {
			sb.FieldBuilder(5).AppendNull()
		} else {
			sb.FieldBuilder(5).(*array.BinaryBuilder).Append(r.data)
		}
	}
	col := sb.NewArray()
	defer col.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "image", Type: col.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(rows)))
	defer rec.Release()
	for _, op := range []string{`"fft_convolve", "params": {"output": "stats"}`, `"watershed"`, `"detect_blobs"`} {
		var out []arrow.RecordBatch
		var err error
		n := allocated(func() { out, err = exchange(t, f.client, `{"op": `+op+`, "column": "image"}`, rec) })
		if err != nil || len(out) != 1 || out[0].NumRows() != int64(len(rows)) {
			t.Fatalf("%s: %d batches, %v", op, len(out), err)
		}
		errs := out[0].Column(int(out[0].NumCols()) - 1).(*array.String)
		for i, r := range rows {
			if r.want == "" && errs.IsValid(i) || r.want != "" && (errs.IsNull(i) || !strings.Contains(errs.Value(i), r.want)) {
				t.Errorf("%s row %d (%s): error %q, want %q", op, i, r.name, errs.Value(i), r.want)
			}
		}
		out[0].Release()
		if n > 16<<20 {
			t.Errorf("%s: the exchange allocated %d MiB, want < 16 MiB", op, n>>20)
		}
	}
	stillServes(t, f)
}
