package nn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"gorgonia.org/tensor"
)

// refTensor is one tensor for the independent encoder: its values are raw
// bit patterns (NaN payloads included), compared bit for bit.
type refTensor struct {
	name  string
	f64   bool
	shape []int
	bits  []uint64 // float32 bits in the low 32 bits when !f64
}

// jsonString quotes s as a JSON string by the grammar of RFC 8259, without
// encoding/json: '"', '\' and control characters escaped, the rest verbatim.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// refEncode writes a safetensors file by the specification, independently of
// WriteSafetensors: the header is built as text with the entries in the given
// order and the tensors' bytes laid out in the order of layout (a
// permutation), ws inserted between JSON tokens, and the header padded with
// pad spaces.
func refEncode(ts []refTensor, meta [][2]string, order, layout []int, ws string, pad int) []byte {
	offsets := make([][2]int, len(ts))
	var data []byte
	for _, i := range layout {
		t := ts[i]
		from := len(data)
		for _, v := range t.bits {
			if t.f64 {
				data = binary.LittleEndian.AppendUint64(data, v)
			} else {
				data = binary.LittleEndian.AppendUint32(data, uint32(v))
			}
		}
		offsets[i] = [2]int{from, len(data)}
	}
	var h strings.Builder
	h.WriteString("{" + ws)
	first := true
	sep := func() {
		if !first {
			h.WriteString(ws + "," + ws)
		}
		first = false
	}
	if meta != nil {
		sep()
		h.WriteString(`"__metadata__"` + ws + ":" + ws + "{")
		for i, kv := range meta {
			if i > 0 {
				h.WriteString(",")
			}
			h.WriteString(jsonString(kv[0]) + ":" + ws + jsonString(kv[1]))
		}
		h.WriteString("}")
	}
	for _, i := range order {
		t := ts[i]
		sep()
		dt := "F32"
		if t.f64 {
			dt = "F64"
		}
		dims := make([]string, len(t.shape))
		for j, d := range t.shape {
			dims[j] = strconv.Itoa(d)
		}
		fmt.Fprintf(&h, `%s:%s{"data_offsets":[%d,%s%d],"shape":[%s],%s"dtype":"%s"}`,
			jsonString(t.name), ws, offsets[i][0], ws, offsets[i][1], strings.Join(dims, ","), ws, dt)
	}
	h.WriteString(ws + "}" + strings.Repeat(" ", pad))
	out := binary.LittleEndian.AppendUint64(nil, uint64(h.Len()))
	out = append(out, h.String()...)
	return append(out, data...)
}

// recipe turns fuzz bytes into a valid file for refEncode: 1 to 4 tensors of
// rank 1 to 3 and dimensions 1 to 4, F32 or F64, names and metadata from an
// alphabet with characters that need escaping, values from the bytes.
type recipe struct {
	b []byte
	i int
}

func (r *recipe) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[r.i%len(r.b)]
	r.i++
	return c
}

var nameRunes = []rune("ab.z0_\"\\/\n\u00e9\u4e16 \x01")

func (r *recipe) name(prefix string) string {
	n := 1 + int(r.next()%6)
	var b strings.Builder
	b.WriteString(prefix)
	for j := 0; j < n; j++ {
		b.WriteRune(nameRunes[int(r.next())%len(nameRunes)])
	}
	return b.String()
}

func (r *recipe) build() ([]refTensor, [][2]string, []int, []int, string, int) {
	nt := 1 + int(r.next()%4)
	ts := make([]refTensor, nt)
	for i := range ts {
		t := refTensor{name: r.name(strconv.Itoa(i)), f64: r.next()%2 == 1} // the prefix keeps names unique
		rank := 1 + int(r.next()%3)
		count := 1
		for j := 0; j < rank; j++ {
			d := 1 + int(r.next()%4)
			t.shape = append(t.shape, d)
			count *= d
		}
		for j := 0; j < count; j++ {
			var v uint64
			for k := 0; k < 8; k++ {
				v = v<<8 | uint64(r.next())
			}
			if !t.f64 {
				v &= math.MaxUint32
			}
			t.bits = append(t.bits, v)
		}
		ts[i] = t
	}
	var meta [][2]string
	if m := int(r.next() % 3); m > 0 {
		for j := 0; j < m; j++ {
			meta = append(meta, [2]string{r.name("k" + strconv.Itoa(j)), r.name("")})
		}
	}
	perm := func() []int {
		p := make([]int, nt)
		for i := range p {
			p[i] = i
		}
		for i := nt - 1; i > 0; i-- {
			j := int(r.next()) % (i + 1)
			p[i], p[j] = p[j], p[i]
		}
		return p
	}
	order, layout := perm(), perm()
	ws := []string{"", " ", "\n\t", "\r\n  "}[r.next()%4]
	return ts, meta, order, layout, ws, int(r.next() % 9)
}

// tensorBits returns t's values as bit patterns (float32 bits widened).
func tensorBits(t *tensor.Dense) []uint64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]uint64, len(d))
		for i, v := range d {
			out[i] = uint64(math.Float32bits(v))
		}
		return out
	case []float64:
		out := make([]uint64, len(d))
		for i, v := range d {
			out[i] = math.Float64bits(v)
		}
		return out
	}
	return nil
}

// checkRead checks what ReadSafetensors returned for file b against its
// own promises: every tensor's shape matches its values, and all of them fit
// in the file (so nothing was allocated beyond it).
func checkRead(t *testing.T, b []byte, ts map[string]*tensor.Dense, md map[string]string) {
	t.Helper()
	if md == nil {
		t.Fatal("nil metadata map")
	}
	total := 0
	for name, x := range ts {
		if x == nil {
			t.Fatalf("tensor %q is nil", name)
		}
		n := x.Shape().TotalSize()
		size := 4
		if x.Dtype() == tensor.Float64 {
			size = 8
		} else if x.Dtype() != tensor.Float32 {
			t.Fatalf("tensor %q has dtype %v", name, x.Dtype())
		}
		// The shape's product, computed without overflow, is the number of
		// values (tensor.Shape.TotalSize wraps around silently).
		prod, ok := mulChecked(x.Shape()...)
		if !ok || prod != n || len(tensorBits(x)) != n || n <= 0 {
			t.Fatalf("tensor %q of shape %v holds %d values", name, x.Shape(), len(tensorBits(x)))
		}
		total += n * size
	}
	if total > len(b) {
		t.Fatalf("%d bytes of tensors from a %d-byte file", total, len(b))
	}
}

// safetensorsSeeds are files that exercise each check of the reader.
func safetensorsSeeds() [][]byte {
	withHeader := func(h string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(b, h...), make([]byte, data)...)
	}
	var good bytes.Buffer
	a := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{1, -2, 3, float32(math.NaN()), float32(math.Inf(1)), 0}))
	c := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{math.Pi, -0.0, math.SmallestNonzeroFloat64}))
	if err := WriteSafetensors(&good, []NamedTensor{{"a", a}, {"c", c}}, map[string]string{"format": CheckpointFormat, "step": "3"}); err != nil {
		panic(err)
	}
	g := good.Bytes()
	seeds := [][]byte{
		g,
		g[:len(g)-1], g[:len(g)/2], g[:9], g[:8], g[:3], nil,
		refEncode([]refTensor{{"x", false, []int{1}, []uint64{0x7fc00001}}, {"y\"\\", true, []int{2, 1}, []uint64{1, math.MaxUint64}}},
			[][2]string{{"k", "v\n"}}, []int{1, 0}, []int{1, 0}, " \n", 3),
		binary.LittleEndian.AppendUint64(nil, 1<<63),
		binary.LittleEndian.AppendUint64(nil, math.MaxUint64),
		append(binary.LittleEndian.AppendUint64(nil, 1<<40), '{', '}'),
		append(binary.LittleEndian.AppendUint64(nil, 3), '{', '}'),
		withHeader(`{}`, 0),
		withHeader(`{}`, 4),
		withHeader(`null`, 0),
		withHeader(`[]`, 0),
		withHeader(`{"__metadata__":null}`, 0),
		withHeader(`{"__metadata__":{"a":1}}`, 0),
		withHeader("{\"\xff\":{}}", 0),
		withHeader(`{} trailing`, 0),
		withHeader(`{"a":null}`, 0),
		withHeader(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 4),
		withHeader(`{"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}`, 1),
		withHeader(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,12]}}`, 12),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0.5,8]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4),
		withHeader(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}`, 0),
		withHeader(`{"a":{"dtype":"F32","shape":[0,4611686018427387905],"data_offsets":[0,0]}}`, 0),
		withHeader(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4),
		withHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4),
		withHeader(`{"a":{"dtype":"F32","shape":[4,4611686018427387905],"data_offsets":[0,16]}}`, 16),
		withHeader(`{"a":{"dtype":"F64","shape":[2,9223372036854775807],"data_offsets":[0,16]}}`, 16),
		withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
	}
	// A byte flipped in the header and one in the data of the good file.
	for _, at := range []int{0, 8, 20, len(g) - 3} {
		b := append([]byte(nil), g...)
		b[at] ^= 0x5a
		seeds = append(seeds, b)
	}
	return seeds
}

// FuzzSafetensors feeds ReadSafetensors arbitrary bytes: it must return an
// error or tensors that fit the file, never panic; what it reads must
// survive WriteSafetensors → ReadSafetensors bit for bit. The same bytes
// also drive refEncode (an encoder written from the specification), whose
// files the reader must read back exactly, and corrupt that file (truncated,
// a byte changed), which must again give an error or a consistent result.
func FuzzSafetensors(f *testing.F) {
	for _, s := range safetensorsSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// 1. Arbitrary bytes.
		ts, md, err := ReadSafetensors(b)
		if err == nil {
			checkRead(t, b, ts, md)
			var nts []NamedTensor
			for n, x := range ts {
				nts = append(nts, NamedTensor{n, x})
			}
			var buf bytes.Buffer
			if err := WriteSafetensors(&buf, nts, md); err != nil {
				t.Fatalf("rewriting what was read: %v", err)
			}
			back, md2, err := ReadSafetensors(buf.Bytes())
			if err != nil {
				t.Fatalf("reading back what was rewritten: %v", err)
			}
			if len(back) != len(ts) || len(md2) != len(md) {
				t.Fatalf("read back %d tensors and %d metadata, want %d and %d", len(back), len(md2), len(ts), len(md))
			}
			for n, x := range ts {
				y := back[n]
				if y == nil || y.Dtype() != x.Dtype() || !y.Shape().Eq(x.Shape()) || !equalBits(tensorBits(x), tensorBits(y)) {
					t.Fatalf("tensor %q changed in the round trip", n)
				}
			}
			for k, v := range md {
				if md2[k] != v {
					t.Fatalf("metadata %q: %q read back as %q", k, v, md2[k])
				}
			}
		}

		// 2. A valid file from the independent encoder, driven by b.
		r := &recipe{b: b}
		rts, meta, order, layout, ws, pad := r.build()
		file := refEncode(rts, meta, order, layout, ws, pad)
		got, gmd, err := ReadSafetensors(file)
		if err != nil {
			t.Fatalf("a valid file was refused: %v\n%q", err, file)
		}
		if len(got) != len(rts) {
			t.Fatalf("%d tensors read, %d written", len(got), len(rts))
		}
		for _, w := range rts {
			x := got[w.name]
			dt := tensor.Float32
			if w.f64 {
				dt = tensor.Float64
			}
			if x == nil || x.Dtype() != dt || !x.Shape().Eq(tensor.Shape(w.shape)) || !equalBits(tensorBits(x), w.bits) {
				t.Fatalf("tensor %q: read %v, wrote %v%v", w.name, x, dt, w.shape)
			}
		}
		if len(gmd) != len(meta) {
			t.Fatalf("metadata %v, wrote %v", gmd, meta)
		}
		for _, kv := range meta {
			if gmd[kv[0]] != kv[1] {
				t.Fatalf("metadata %q = %q, wrote %q", kv[0], gmd[kv[0]], kv[1])
			}
		}

		// 3. That file corrupted: cut short, or one byte changed.
		cut := int(r.next()) * len(file) / 256
		if ts, md, err := ReadSafetensors(file[:cut]); err == nil {
			checkRead(t, file[:cut], ts, md)
		}
		bad := append([]byte(nil), file...)
		at := (int(r.next())<<8 | int(r.next())) % len(bad)
		bad[at] ^= 1 << (r.next() % 8)
		if ts, md, err := ReadSafetensors(bad); err == nil {
			checkRead(t, bad, ts, md)
		}
	})
}

func equalBits(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSafetensorsAllocBound: headers that claim huge tensors make the reader
// allocate in proportion to the file, not to the claim.
func TestSafetensorsAllocBound(t *testing.T) {
	for _, b := range safetensorsSeeds() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ReadSafetensors(b)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(64*len(b)+1<<20) {
			t.Errorf("%d bytes allocated reading a %d-byte file (%q…)", alloc, len(b), b[:min(len(b), 80)])
		}
	}
}

// TestSafetensorsIndependentEncoder: the reader reads refEncode's files
// (names with escapes and non-ASCII, tensors laid out in another order than
// the header's, whitespace, NaN payloads) bit for bit, and refEncode's JSON
// strings are what the specification says.
func TestSafetensorsIndependentEncoder(t *testing.T) {
	if s := jsonString("a\"\\\n\u00e9"); s != `"a\"\\\u000aé"` || !utf8.ValidString(s) {
		t.Fatalf("jsonString: %s", s)
	}
	for seed := 0; seed < 200; seed++ {
		b := []byte(fmt.Sprintf("seed %d: %d", seed, seed*7919))
		r := &recipe{b: b}
		rts, meta, order, layout, ws, pad := r.build()
		got, _, err := ReadSafetensors(refEncode(rts, meta, order, layout, ws, pad))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, w := range rts {
			if x := got[w.name]; x == nil || !equalBits(tensorBits(x), w.bits) {
				t.Fatalf("seed %d: tensor %q differs", seed, w.name)
			}
		}
	}
}
