package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestSafetensorsBytes checks the encoder against bytes written out by hand
// from the format's specification.
func TestSafetensorsBytes(t *testing.T) {
	a := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, -2}))
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, []NamedTensor{{"a", a}}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	header := `{"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	for (8+len(header))%8 != 0 {
		header += " "
	}
	want := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	want = append(want, header...)
	want = append(want, 0x00, 0x00, 0x80, 0x3f) // 1.0f
	want = append(want, 0x00, 0x00, 0x00, 0xc0) // -2.0f
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("encoded\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

// miniParse is an independent minimal safetensors reader: it follows the
// specification directly and returns each tensor's values as float64.
func miniParse(t *testing.T, b []byte) (map[string][]float64, map[string][]int, map[string]string) {
	t.Helper()
	n := int(binary.LittleEndian.Uint64(b))
	if (8+n)%8 != 0 {
		t.Fatalf("data buffer starts at %d, not 8-aligned", 8+n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	vals, shapes, meta := map[string][]float64{}, map[string][]int{}, map[string]string{}
	for k, raw := range hdr {
		if k == "__metadata__" {
			json.Unmarshal(raw, &meta)
			continue
		}
		var e struct {
			Dtype   string
			Shape   []int
			Offsets []int `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatal(err)
		}
		data := b[8+n+e.Offsets[0] : 8+n+e.Offsets[1]]
		var vs []float64
		for i := 0; i < len(data); {
			if e.Dtype == "F32" {
				vs = append(vs, float64(math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))))
				i += 4
			} else {
				vs = append(vs, math.Float64frombits(binary.LittleEndian.Uint64(data[i:])))
				i += 8
			}
		}
		vals[k], shapes[k] = vs, e.Shape
	}
	return vals, shapes, meta
}

func TestSafetensorsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	f32 := make([]float32, 6)
	for i := range f32 {
		f32[i] = float32(rng.NormFloat64())
	}
	f64 := randSlice(rng, 5, 1, 0)
	ts := []NamedTensor{
		{"z.weight", tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(f32))},
		{"a.bias", tensor.New(tensor.WithShape(5), tensor.WithBacking(f64))},
	}
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, ts, map[string]string{"step": "7"}); err != nil {
		t.Fatal(err)
	}
	vals, shapes, meta := miniParse(t, buf.Bytes())
	if meta["step"] != "7" || shapes["z.weight"][0] != 2 || shapes["z.weight"][1] != 3 || shapes["a.bias"][0] != 5 {
		t.Fatalf("independent parser read meta %v shapes %v", meta, shapes)
	}
	for i, v := range f32 {
		if vals["z.weight"][i] != float64(v) {
			t.Fatalf("z.weight[%d]: %g, want %g", i, vals["z.weight"][i], v)
		}
	}
	for i, v := range f64 {
		if vals["a.bias"][i] != v {
			t.Fatalf("a.bias[%d]: %g, want %g", i, vals["a.bias"][i], v)
		}
	}
	got, md, err := ReadSafetensors(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if md["step"] != "7" {
		t.Fatalf("metadata %v", md)
	}
	if !got["z.weight"].Shape().Eq(tensor.Shape{2, 3}) || got["z.weight"].Dtype() != tensor.Float32 {
		t.Fatalf("z.weight read as %v%v", got["z.weight"].Dtype(), got["z.weight"].Shape())
	}
	for i, v := range got["z.weight"].Data().([]float32) {
		if v != f32[i] {
			t.Fatalf("z.weight[%d] read %g, want %g", i, v, f32[i])
		}
	}
	for i, v := range got["a.bias"].Data().([]float64) {
		if v != f64[i] {
			t.Fatalf("a.bias[%d] read %g, want %g", i, v, f64[i])
		}
	}
}

func TestSafetensorsRejectsBadFiles(t *testing.T) {
	good := func() []byte {
		var buf bytes.Buffer
		a := tensor.New(tensor.WithShape(2), tensor.WithBacking([]float32{1, 2}))
		WriteSafetensors(&buf, []NamedTensor{{"a", a}}, nil)
		return buf.Bytes()
	}
	withHeader := func(h string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(b, h...), make([]byte, data)...)
	}
	for _, tc := range []struct {
		name string
		file []byte
		msg  string
	}{
		{"short", []byte{1, 2, 3}, "shorter"},
		{"truncated data", good()[:len(good())-1], "larger"},
		{"huge header length", binary.LittleEndian.AppendUint64(nil, 1<<40), "header length"},
		{"bad json", withHeader(`{"a":`, 0), "JSON"},
		{"bad dtype", withHeader(`{"a":{"dtype":"I8","shape":[1],"data_offsets":[0,1]}}`, 1), "dtype"},
		{"size mismatch", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, 8), "needs 4 bytes"},
		{"larger than the buffer", withHeader(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), "larger"},
		{"overlap", withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlaps"},
		{"hole", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "cover"},
		{"negative shape", withHeader(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "negative"},
		{"huge shape", withHeader(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}`, 4), "larger"},
		{"shape product wraps around", withHeader(`{"a":{"dtype":"F32","shape":[4,4611686018427387905],"data_offsets":[0,16]}}`, 16), "larger"},
		{"trailing garbage", withHeader(`{} x`, 0), "JSON"},
		{"null header", withHeader(`null`, 0), "not a JSON object"},
		{"header not UTF-8", withHeader("{\"\xff\":{}}", 0), "UTF-8"},
		{"null metadata", withHeader(`{"__metadata__":null}`, 0), "__metadata__"},
		{"three offsets", withHeader(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,4]}}`, 4), "data_offsets [0 4 4]"},
		{"rank 0", withHeader(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4), "rank-0"},
	} {
		_, _, err := ReadSafetensors(tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.msg)
		}
	}
	if err := WriteSafetensors(&bytes.Buffer{}, []NamedTensor{{"a", tensor.New(tensor.WithShape(1), tensor.WithBacking([]int{1}))}}, nil); err == nil {
		t.Error("int tensor accepted by the writer")
	}
	a := tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{1}))
	if err := WriteSafetensors(&bytes.Buffer{}, []NamedTensor{{"a", a}, {"a", a}}, nil); err == nil {
		t.Error("duplicate names accepted")
	}
}
