package exposition

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// A response is one gzip member (RFC 1952) assembled at scrape time from
// fragments compressed ahead of it. Each fragment is a run of raw deflate
// blocks that ends with a sync flush (an empty stored block, so it ends on
// a byte boundary and is not final) and refers to no data before it, so
// fragments can be concatenated in any order into one deflate stream. The
// gzip trailer's CRC-32 is combined from the fragments' own checksums.
//
// Several concatenated gzip members would be simpler, but curl
// --compressed stops after the first one, so the response is one member.

// compressionLevel trades a little size for speed: the text is very
// repetitive, and at 100,000 partitions compressing it is most of a
// rendering's cost.
const compressionLevel = flate.BestSpeed

// fragment is compressed text plus what the gzip trailer needs of it.
type fragment struct {
	deflate []byte
	crc     uint32
	size    int64
	// shift multiplies a CRC by x^(8*size): combining a running checksum
	// with this fragment is then one matrix product instead of a
	// logarithmic number of squarings at every scrape.
	shift gf2Matrix
}

func newFragment(deflate []byte, crc uint32, size int64) fragment {
	return fragment{deflate: deflate, crc: crc, size: size, shift: crcShift(size)}
}

var flateWriters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, compressionLevel)
	if err != nil {
		panic(err) // only for an invalid level, a constant
	}
	return w
}}

// compressFragment compresses text into a new fragment.
func compressFragment(text []byte) fragment {
	var out bytes.Buffer
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&out)
	_, _ = w.Write(text) // a bytes.Buffer does not fail
	_ = w.Flush()
	w.Reset(nil)
	flateWriters.Put(w)
	return newFragment(out.Bytes(), crc32.ChecksumIEEE(text), int64(len(text)))
}

// Stream is the text of one scrape response as a list of fragments.
type Stream struct {
	parts []*fragment
}

func (st *Stream) add(f *fragment) {
	if f.size > 0 {
		st.parts = append(st.parts, f)
	}
}

// AddSet adds the families of the set in order, each with its HELP and
// TYPE once, followed by its series from every rendering. Families without
// series are left out.
func (st *Stream) AddSet(s *Set, renderings []*Rendered) {
	for i, d := range s.descs {
		header := false
		for _, r := range renderings {
			if r == nil || r.set != s || r.families[i].size == 0 {
				continue
			}
			if !header {
				st.add(&d.header)
				header = true
			}
			st.add(&r.families[i])
		}
	}
}

// gzipHeader is a minimal member header: deflate, no name, no time, OS
// unknown.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// finalBlock is an empty fixed-Huffman block with BFINAL set: it ends the
// deflate stream after the last sync-flushed fragment.
var finalBlock = []byte{0x03, 0x00}

// writeGzip writes first and the stream's fragments as one gzip member.
func (st *Stream) writeGzip(w io.Writer, first *fragment) error {
	if _, err := w.Write(gzipHeader); err != nil {
		return err
	}
	var crc uint32
	var size int64
	for _, f := range append([]*fragment{first}, st.parts...) {
		if f == nil || f.size == 0 {
			continue
		}
		if _, err := w.Write(f.deflate); err != nil {
			return err
		}
		crc = f.shift.times(crc) ^ f.crc
		size += f.size
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc)
	binary.LittleEndian.PutUint32(trailer[4:], uint32(size)) // ISIZE is the size mod 2^32
	if _, err := w.Write(finalBlock); err != nil {
		return err
	}
	_, err := w.Write(trailer[:])
	return err
}

var flateReaders sync.Pool

// writePlain decompresses the stream's fragments into w.
func (st *Stream) writePlain(w io.Writer) error {
	readers := make([]io.Reader, 0, len(st.parts)+1)
	for _, f := range st.parts {
		readers = append(readers, bytes.NewReader(f.deflate))
	}
	readers = append(readers, bytes.NewReader(finalBlock))
	src := io.MultiReader(readers...)
	var r io.ReadCloser
	if pooled, ok := flateReaders.Get().(io.ReadCloser); ok {
		r = pooled
		if err := r.(flate.Resetter).Reset(src, nil); err != nil {
			return err
		}
	} else {
		r = flate.NewReader(src)
	}
	defer flateReaders.Put(r)
	_, err := io.Copy(w, r)
	return err
}

// PlainText returns what the writers add to a response, uncompressed, for
// tests and tools.
func PlainText(writers ...TextWriter) ([]byte, error) {
	var st Stream
	for _, tw := range writers {
		tw.AppendText(&st)
	}
	var out bytes.Buffer
	err := st.writePlain(&out)
	return out.Bytes(), err
}

// gf2Matrix is a linear operator on CRC-32 values (over GF(2)), as in
// zlib's crc32_combine.
type gf2Matrix [32]uint32

func (m *gf2Matrix) times(vec uint32) uint32 {
	var sum uint32
	for i := 0; vec != 0; i, vec = i+1, vec>>1 {
		if vec&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

func (m *gf2Matrix) square() gf2Matrix {
	var sq gf2Matrix
	for n := range m {
		sq[n] = m.times(m[n])
	}
	return sq
}

// crcShift returns the operator that appends n zero bytes to a CRC-32
// register: crc(A ‖ B) = crcShift(len(B)).times(crc(A)) ^ crc(B).
func crcShift(n int64) gf2Matrix {
	var result gf2Matrix // identity
	for i := range result {
		result[i] = 1 << i
	}
	// op is the operator for one zero bit, then squared up to one byte.
	var op gf2Matrix
	op[0] = crc32.IEEE
	for i := 1; i < 32; i++ {
		op[i] = 1 << (i - 1)
	}
	op = op.square() // 2 bits
	op = op.square() // 4 bits
	op = op.square() // 8 bits: one byte
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			result = result.compose(&op)
		}
		op = op.square()
	}
	return result
}

// compose returns the operator applying m, then a.
func (m *gf2Matrix) compose(a *gf2Matrix) gf2Matrix {
	var out gf2Matrix
	for i := range m {
		out[i] = a.times(m[i])
	}
	return out
}
