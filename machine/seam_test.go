package machine_test

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/machine"
)

// fakeDevice is a backend whose memory the host cannot see (Host returns
// nil), as a GPU's: every value crosses by Upload and Download, and its
// registry has one kernel (tensor + tensor of one shape). It checks that the
// machine needs nothing of a device beyond the Backend interface.
type fakeDevice struct {
	host               machine.Backend
	uploads, downloads int
}

// devBuf is fake device memory: a host buffer that only fakeDevice opens.
type devBuf struct{ inner machine.Buffer }

func (b devBuf) Dtype() tensor.Dtype { return b.inner.Dtype() }
func (b devBuf) Len() int            { return b.inner.Len() }

func (d *fakeDevice) Name() string { return "fake" }
func (d *fakeDevice) Alloc(dt tensor.Dtype, n int) (machine.Buffer, error) {
	b, err := d.host.Alloc(dt, n)
	return devBuf{b}, err
}
func (d *fakeDevice) Host(machine.Operand) gorgonia.Value { return nil }
func (d *fakeDevice) Close() error                        { return nil }

// open is the device's own view of an operand.
func (d *fakeDevice) open(o machine.Operand) gorgonia.Value {
	return d.host.Host(machine.Operand{Buf: o.Buf.(devBuf).inner, Off: o.Off, Shape: o.Shape})
}
func (d *fakeDevice) Upload(dst machine.Operand, src gorgonia.Value) error {
	d.uploads++
	return d.host.Upload(machine.Operand{Buf: dst.Buf.(devBuf).inner, Off: dst.Off, Shape: dst.Shape}, src)
}
func (d *fakeDevice) Download(dst gorgonia.Value, src machine.Operand) error {
	d.downloads++
	return d.host.Download(dst, machine.Operand{Buf: src.Buf.(devBuf).inner, Off: src.Off, Shape: src.Shape})
}

func (d *fakeDevice) Kernels() machine.Registry {
	return machine.Registry{"gorgonia.elemBinOp": func(op gorgonia.Op, out machine.Operand, in []machine.Operand) (machine.Kernel, error) {
		if !strings.HasPrefix(op.String(), "+") || len(in) != 2 || !in[0].Shape.Eq(out.Shape) || !in[1].Shape.Eq(out.Shape) || out.Shape.IsScalar() {
			return nil, nil
		}
		a, b, c := d.open(in[0]), d.open(in[1]), d.open(out)
		switch c := c.Data().(type) {
		case []float64:
			x, y := a.Data().([]float64), b.Data().([]float64)
			return func() error {
				for i := range c {
					c[i] = x[i] + y[i]
				}
				return nil
			}, nil
		case []float32:
			x, y := a.Data().([]float32), b.Data().([]float32)
			return func() error {
				for i := range c {
					c[i] = x[i] + y[i]
				}
				return nil
			}, nil
		}
		return nil, nil
	}}
}

// TestDeviceSeam runs cases on fakeDevice and checks that loss and
// gradients equal the CPU machine's bit for bit, that the registry's
// kernel ran and that the other ops ran on the host through copies.
func TestDeviceSeam(t *testing.T) {
	for _, c := range []string{"attention/causal", "attention/in-place-after", "nn/layers", "nn/gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c, dt), func(t *testing.T) {
				cpu, loss, _, grads := onMachine(t, named(c), dt)
				wantLoss, wantGrads := results(t, cpu, loss, grads)
				dev := &fakeDevice{host: machine.CPU()}
				m, loss, _, grads := onMachine(t, named(c), dt, machine.WithBackend(dev))
				gotLoss, gotGrads := results(t, m, loss, grads)
				if gotLoss != wantLoss {
					t.Fatalf("loss %v on the device, %v on the CPU", gotLoss, wantLoss)
				}
				for i := range wantGrads {
					for j := range wantGrads[i] {
						if gotGrads[i][j] != wantGrads[i][j] {
							t.Fatalf("gradient %d [%d]: %v on the device, %v on the CPU", i, j, gotGrads[i][j], wantGrads[i][j])
						}
					}
				}
				r := m.Report()
				if r.DeviceKernels == 0 || len(r.HostOps) == 0 || dev.uploads == 0 || dev.downloads == 0 {
					t.Fatalf("device kernels %d, host ops %d, uploads %d, downloads %d: want all > 0",
						r.DeviceKernels, len(r.HostOps), dev.uploads, dev.downloads)
				}
			})
		}
	}
}
