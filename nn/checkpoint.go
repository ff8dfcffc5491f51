package nn

// Checkpoints are safetensors files (see safetensors.go) holding
//
//	<param name>          each parameter, e.g. "blocks.0.attn.qkv.weight"
//	optim.m.<param name>  AdamW's first moment of that parameter (same shape and dtype)
//	optim.v.<param name>  AdamW's second moment
//
// and the metadata (all values strings)
//
//	"format"       CheckpointFormat
//	"step"         the number of training steps done
//	"optim.t"      AdamW's update count; "optim.beta1", "optim.beta2",
//	               "optim.eps", "optim.weight_decay" its hyperparameters
//	               (written with strconv 'g' -1: they read back exactly)
//
// plus whatever the caller adds (the GPT model stores its Config as JSON
// under "config"). The parameter names and shapes of the GPT model are listed
// in gpt.go. Matrices are stored as [In, Out] (y = x·W), the transpose of
// PyTorch's nn.Linear layout.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"gorgonia.org/tensor"
)

// CheckpointFormat is the "format" metadata value of nn's checkpoints.
const CheckpointFormat = "flashgorgon-nn-v1"

// saveWriterHook, when set (tests only), wraps the writer of SaveCheckpoint,
// e.g. to interrupt a save midway.
var saveWriterHook func(io.Writer) io.Writer

// SaveCheckpoint writes params, the optimizer state (when opt is not nil),
// step and meta to path. The file is written to a temporary file in the same
// directory, synced, and renamed over path, so an interrupted save leaves any
// previous checkpoint at path intact.
func SaveCheckpoint(path string, params []*Param, opt *AdamW, step int, meta map[string]string) error {
	tensors := make([]NamedTensor, 0, 3*len(params))
	for _, p := range params {
		tensors = append(tensors, NamedTensor{p.Name, p.Value})
	}
	md := map[string]string{}
	for k, v := range meta {
		md[k] = v
	}
	md["format"] = CheckpointFormat
	md["step"] = strconv.Itoa(step)
	if opt != nil {
		if len(opt.params) != len(params) {
			return fmt.Errorf("nn.SaveCheckpoint: optimizer holds %d parameters, %d given", len(opt.params), len(params))
		}
		for i, p := range opt.params {
			if p != params[i] {
				return fmt.Errorf("nn.SaveCheckpoint: optimizer parameter %d is %s, given %s", i, p.Name, params[i].Name)
			}
			tensors = append(tensors, NamedTensor{"optim.m." + p.Name, opt.m[i]}, NamedTensor{"optim.v." + p.Name, opt.v[i]})
		}
		md["optim.t"] = strconv.Itoa(opt.t)
		md["optim.beta1"] = ftoa(opt.Beta1)
		md["optim.beta2"] = ftoa(opt.Beta2)
		md["optim.eps"] = ftoa(opt.Eps)
		md["optim.weight_decay"] = ftoa(opt.WeightDecay)
	}
	err := writeFileAtomic(path, func(w io.Writer) error {
		if saveWriterHook != nil {
			w = saveWriterHook(w)
		}
		return WriteSafetensors(w, tensors, md)
	})
	if err != nil {
		return fmt.Errorf("nn.SaveCheckpoint: %w", err)
	}
	return nil
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// writeFileAtomic writes path through a temporary file: create it next to
// path, write, flush, fsync, close, rename over path, fsync the directory. On
// any error the temporary file is removed and path is untouched.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// Make the rename itself durable; not every platform can sync a
	// directory, and the data is already safe, so a failure here is ignored.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Checkpoint is a checkpoint file read into memory.
type Checkpoint struct {
	Tensors  map[string]*tensor.Dense
	Metadata map[string]string
	Step     int
}

// ReadCheckpoint reads and validates the checkpoint at path.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn.ReadCheckpoint: %w", err)
	}
	ts, md, err := ReadSafetensors(b)
	if err != nil {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: %w", path, err)
	}
	if md["format"] != CheckpointFormat {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: format %q, want %q", path, md["format"], CheckpointFormat)
	}
	step, err := strconv.Atoi(md["step"])
	if err != nil || step < 0 {
		return nil, fmt.Errorf("nn.ReadCheckpoint %s: bad step %q", path, md["step"])
	}
	return &Checkpoint{Tensors: ts, Metadata: md, Step: step}, nil
}

// Restore copies the checkpoint into params (matched by name; dtype and shape
// must agree) and, when opt is not nil, the optimizer's moments, update count
// and hyperparameters. Nothing is modified unless everything matches.
func (c *Checkpoint) Restore(params []*Param, opt *AdamW) error {
	type copyJob struct{ dst, src *tensor.Dense }
	var jobs []copyJob
	find := func(name string, like *tensor.Dense) (*tensor.Dense, error) {
		t, ok := c.Tensors[name]
		if !ok {
			return nil, fmt.Errorf("nn.Checkpoint.Restore: tensor %q is missing", name)
		}
		if t.Dtype() != like.Dtype() || !t.Shape().Eq(like.Shape()) {
			return nil, fmt.Errorf("nn.Checkpoint.Restore: tensor %q is %v%v, the model has %v%v", name, t.Dtype(), t.Shape(), like.Dtype(), like.Shape())
		}
		return t, nil
	}
	for _, p := range params {
		t, err := find(p.Name, p.Value)
		if err != nil {
			return err
		}
		jobs = append(jobs, copyJob{p.Value, t})
	}
	var hyper [4]float64
	optT := 0
	if opt != nil {
		for i, p := range opt.params {
			m, err := find("optim.m."+p.Name, opt.m[i])
			if err != nil {
				return err
			}
			v, err := find("optim.v."+p.Name, opt.v[i])
			if err != nil {
				return err
			}
			jobs = append(jobs, copyJob{opt.m[i], m}, copyJob{opt.v[i], v})
		}
		var err error
		if optT, err = strconv.Atoi(c.Metadata["optim.t"]); err != nil || optT < 0 {
			return fmt.Errorf("nn.Checkpoint.Restore: bad optim.t %q", c.Metadata["optim.t"])
		}
		for i, k := range []string{"optim.beta1", "optim.beta2", "optim.eps", "optim.weight_decay"} {
			if hyper[i], err = strconv.ParseFloat(c.Metadata[k], 64); err != nil {
				return fmt.Errorf("nn.Checkpoint.Restore: bad %s %q", k, c.Metadata[k])
			}
		}
	}
	for _, j := range jobs {
		copyDense(j.dst, j.src)
	}
	if opt != nil {
		opt.t = optT
		opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay = hyper[0], hyper[1], hyper[2], hyper[3]
	}
	return nil
}

// copyDense copies src into dst (same dtype and size).
func copyDense(dst, src *tensor.Dense) {
	switch d := dst.Data().(type) {
	case []float32:
		copy(d, src.Data().([]float32))
	case []float64:
		copy(d, src.Data().([]float64))
	}
}
