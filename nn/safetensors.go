package nn

// The safetensors format (https://github.com/huggingface/safetensors):
//
//	bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
//	bytes [8, 8+N)      a UTF-8 JSON object: for each tensor name
//	                    {"dtype": "F32"|"F64", "shape": [..], "data_offsets": [begin, end]},
//	                    plus an optional "__metadata__" object of string → string
//	bytes [8+N, …)      the data buffer; a tensor's bytes are buffer[begin:end],
//	                    row-major, little-endian
//
// The writer sorts tensors by name, packs them without gaps, and pads the
// header with spaces so that the buffer starts at a multiple of 8 bytes. The
// reader checks every offset against the buffer and the shape.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"unicode/utf8"

	"gorgonia.org/tensor"
)

// NamedTensor is one entry of a safetensors file.
type NamedTensor struct {
	Name   string
	Tensor *tensor.Dense
}

type stHeaderEntry struct {
	Dtype       string `json:"dtype"`
	Shape       []int  `json:"shape"`
	DataOffsets []int  `json:"data_offsets"` // [begin, end]
}

// maxHeaderLen bounds the JSON header a reader accepts (100 MB, as the
// reference implementation does).
const maxHeaderLen = 100 << 20

func stDtype(dt tensor.Dtype) (string, int, error) {
	switch dt {
	case tensor.Float32:
		return "F32", 4, nil
	case tensor.Float64:
		return "F64", 8, nil
	}
	return "", 0, fmt.Errorf("safetensors: dtype %v is not supported (float32 and float64 are)", dt)
}

// WriteSafetensors writes tensors and metadata in the safetensors format.
// Names must be unique, non-empty and not "__metadata__".
func WriteSafetensors(w io.Writer, tensors []NamedTensor, metadata map[string]string) error {
	if w == nil {
		return fmt.Errorf("safetensors: the writer is nil")
	}
	ts := append([]NamedTensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := 0
	for i, nt := range ts {
		if nt.Name == "" || nt.Name == "__metadata__" {
			return fmt.Errorf("safetensors: invalid tensor name %q", nt.Name)
		}
		if i > 0 && ts[i-1].Name == nt.Name {
			return fmt.Errorf("safetensors: tensor name %q appears twice", nt.Name)
		}
		if nt.Tensor == nil {
			return fmt.Errorf("safetensors: tensor %q is nil", nt.Name)
		}
		code, size, err := stDtype(nt.Tensor.Dtype())
		if err != nil {
			return fmt.Errorf("%w (tensor %q)", err, nt.Name)
		}
		shape := []int(nt.Tensor.Shape().Clone())
		if shape == nil {
			shape = []int{}
		}
		n := nt.Tensor.Shape().TotalSize() * size
		header[nt.Name] = stHeaderEntry{Dtype: code, Shape: shape, DataOffsets: []int{off, off + n}}
		off += n
	}
	hb, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors: encoding the header: %w", err)
	}
	for (8+len(hb))%8 != 0 {
		hb = append(hb, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hb)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	for _, nt := range ts {
		switch d := nt.Tensor.Data().(type) {
		case []float32:
			for _, v := range d {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
				if len(buf) >= 1<<16 {
					if _, err := w.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
			}
		case []float64:
			for _, v := range d {
				buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
				if len(buf) >= 1<<16 {
					if _, err := w.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

// ReadSafetensors parses a whole safetensors file held in b. It returns the
// tensors by name and the metadata (empty when the file has none). Any
// inconsistency (lengths, a header that is not one UTF-8 JSON object, offsets
// outside the buffer or overlapping, a shape that does not match its byte
// range or whose size overflows, an unsupported dtype) is an error, never a
// panic; the memory it allocates is bounded by a small multiple of len(b).
// Rank-0 and empty tensors, valid in the format, are not supported.
func ReadSafetensors(b []byte) (map[string]*tensor.Dense, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("safetensors: file of %d bytes is shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > maxHeaderLen || n > uint64(len(b)-8) {
		return nil, nil, fmt.Errorf("safetensors: header length %d does not fit a file of %d bytes", n, len(b))
	}
	hb := b[8 : 8+n]
	if !utf8.Valid(hb) {
		return nil, nil, fmt.Errorf("safetensors: the %d-byte header is not valid UTF-8", n)
	}
	if t := bytes.TrimLeft(hb, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, nil, fmt.Errorf("safetensors: the header is not a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hb, &raw); err != nil {
		return nil, nil, fmt.Errorf("safetensors: parsing the JSON header: %w", err)
	}
	data := b[8+n:]
	meta := map[string]string{}
	if m, ok := raw["__metadata__"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil || meta == nil {
			return nil, nil, fmt.Errorf("safetensors: __metadata__ is not a string map (%v)", err)
		}
		delete(raw, "__metadata__")
	}
	type span struct {
		name     string
		from, to int
	}
	var spans []span
	out := make(map[string]*tensor.Dense, len(raw))
	for name, msg := range raw {
		var e stHeaderEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, nil, fmt.Errorf("safetensors: entry %q: %w", name, err)
		}
		var dt tensor.Dtype
		var size int
		switch e.Dtype {
		case "F32":
			dt, size = tensor.Float32, 4
		case "F64":
			dt, size = tensor.Float64, 8
		default:
			return nil, nil, fmt.Errorf("safetensors: tensor %q has dtype %q; F32 and F64 are supported", name, e.Dtype)
		}
		for _, s := range e.Shape {
			if s < 0 {
				return nil, nil, fmt.Errorf("safetensors: tensor %q has negative dimension in shape %v", name, e.Shape)
			}
		}
		if len(e.Shape) == 0 || slices.Contains(e.Shape, 0) {
			return nil, nil, fmt.Errorf("safetensors: tensor %q has shape %v; empty and rank-0 tensors are not supported", name, e.Shape)
		}
		// count = Π shape, checked against the buffer before each product
		// so that it cannot overflow (every dimension is ≥ 1 here).
		count := 1
		for _, s := range e.Shape {
			if s > len(data)/size/count {
				return nil, nil, fmt.Errorf("safetensors: tensor %q of shape %v and dtype %s is larger than the %d-byte buffer", name, e.Shape, e.Dtype, len(data))
			}
			count *= s
		}
		if len(e.DataOffsets) != 2 {
			return nil, nil, fmt.Errorf("safetensors: tensor %q has data_offsets %v; want [begin, end]", name, e.DataOffsets)
		}
		from, to := e.DataOffsets[0], e.DataOffsets[1]
		if from < 0 || to < from || to > len(data) {
			return nil, nil, fmt.Errorf("safetensors: tensor %q has offsets [%d, %d) outside the %d-byte buffer", name, from, to, len(data))
		}
		if to-from != count*size {
			return nil, nil, fmt.Errorf("safetensors: tensor %q of shape %v and dtype %s needs %d bytes, offsets give %d", name, e.Shape, e.Dtype, count*size, to-from)
		}
		spans = append(spans, span{name, from, to})
		src := data[from:to]
		var t *tensor.Dense
		if dt == tensor.Float32 {
			v := make([]float32, count)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
			}
			t = tensor.New(tensor.WithShape(e.Shape...), tensor.WithBacking(v))
		} else {
			v := make([]float64, count)
			for i := range v {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
			}
			t = tensor.New(tensor.WithShape(e.Shape...), tensor.WithBacking(v))
		}
		out[name] = t
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	end := 0
	for _, s := range spans {
		if s.from < end {
			return nil, nil, fmt.Errorf("safetensors: tensor %q overlaps the previous tensor (starts at %d, previous ends at %d)", s.name, s.from, end)
		}
		if s.from > end {
			return nil, nil, fmt.Errorf("safetensors: tensors do not cover the data buffer: bytes [%d, %d) belong to no tensor", end, s.from)
		}
		end = s.to
	}
	if end != len(data) {
		return nil, nil, fmt.Errorf("safetensors: tensors cover %d of the %d data bytes", end, len(data))
	}
	return out, meta, nil
}
