package machine_test

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/graph"
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

// opsOnly is the CPU without its kernel registry: every node runs as its
// Gorgonia op, as the nodes fakeDevice has no kernel for do.
type opsOnly struct{ machine.Backend }

func (opsOnly) Kernels() machine.Registry { return nil }

// TestDeviceSeam runs cases on fakeDevice and checks that loss and
// gradients equal those of the CPU machine running every op as its Gorgonia
// op (opsOnly) bit for bit, that the registry's
// kernel ran and that the other ops ran on the host through copies.
func TestDeviceSeam(t *testing.T) {
	for _, c := range []string{"attention/causal", "attention/in-place-after", "nn/layers", "nn/gpt"} {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c, dt), func(t *testing.T) {
				cpu, loss, _, grads := onMachine(t, named(c), dt, machine.WithBackend(opsOnly{machine.CPU()}))
				wantLoss, wantGrads := results(t, cpu, loss, grads)
				dev := &fakeDevice{host: machine.CPU()}
				m, loss, _, grads := onMachine(t, named(c), dt, machine.WithBackend(dev))
				gotLoss, gotGrads := results(t, m, loss, grads)
				sameResults(t, "on the device", "on the CPU", gotLoss, wantLoss, gotGrads, wantGrads)
				r := m.Report()
				if r.DeviceKernels == 0 || len(r.HostOps) == 0 || dev.uploads == 0 || dev.downloads == 0 {
					t.Fatalf("device kernels %d, host ops %d, uploads %d, downloads %d: want all > 0",
						r.DeviceKernels, len(r.HostOps), dev.uploads, dev.downloads)
				}
			})
		}
	}
}

// TestResident: on a device, a Resident input is uploaded at the first run
// only; Reload uploads it again; SyncToHost copies the device's value (here
// changed behind the machine's back, as an optimizer on the device would)
// into the bound value. On the CPU Resident changes nothing. A backend
// without an optimizer refuses NewAdamW.
func TestResident(t *testing.T) {
	build := func() (*gorgonia.ExprGraph, *gorgonia.Node, *gorgonia.Node) {
		g := gorgonia.NewGraph()
		w := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("w"),
			gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{1, 2, 3}))))
		x := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(3), gorgonia.WithName("x"),
			gorgonia.WithValue(tensor.New(tensor.WithBacking([]float64{10, 20, 30}))))
		return g, w, gorgonia.Must(gorgonia.Add(w, x))
	}
	read := func(m *machine.Machine, y *gorgonia.Node) []float64 {
		if err := m.RunAll(); err != nil {
			t.Fatal(err)
		}
		v, err := m.Value(y)
		if err != nil {
			t.Fatal(err)
		}
		return append([]float64(nil), v.Data().([]float64)...)
	}
	want := func(got []float64, w ...float64) {
		t.Helper()
		for i := range w {
			if got[i] != w[i] {
				t.Fatalf("got %v, want %v", got, w)
			}
		}
	}

	dev := &fakeDevice{host: machine.CPU()}
	g, w, y := build()
	m, err := machine.New(g, machine.WithBackend(dev), machine.Resident(w), machine.Keep(y))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want(read(m, y), 11, 22, 33)
	up := dev.uploads
	w.Value().Data().([]float64)[0] = 100 // the host's copy changes; the device keeps its own
	want(read(m, y), 11, 22, 33)
	if n := dev.uploads - up; n != 1 { // x only
		t.Errorf("%d uploads in the second run, want 1 (x; w is resident)", n)
	}
	m.Reload(w)
	want(read(m, y), 110, 22, 33)
	if _, err := m.NewAdamW([]*gorgonia.Node{w}, []*gorgonia.Node{y}, []bool{false}); err == nil || !strings.Contains(err.Error(), "no device optimizer") {
		t.Errorf("NewAdamW on a backend without an optimizer: %v", err)
	}
	// The host's copy changes again without a Reload: SyncToHost puts the
	// device's value back.
	w.Value().Data().([]float64)[1] = -1
	if err := m.SyncToHost(w); err != nil {
		t.Fatal(err)
	}
	want(w.Value().Data().([]float64), 100, 2, 3)

	// On the CPU the bound value is read at every run.
	g, w, y = build()
	c, err := machine.New(g, machine.OnDevice("cpu"), machine.Resident(w), machine.Keep(y))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want(read(c, y), 11, 22, 33)
	w.Value().Data().([]float64)[0] = 100
	want(read(c, y), 110, 22, 33)
}

// TestDeviceDescriptions checks the seam between the ops and a device's
// kernels on the ops of every test graph and its gradient: each op that the
// CUDA registry covers describes its parameters through its graph.OpDef
// (graph.DefOf) as the makers read them, and attention's pieces are views.
// A CUDA run needs a GPU; this needs none.
func TestDeviceDescriptions(t *testing.T) {
	type (
		softmaxSpecer interface {
			DeviceSpec(tensor.Shape) cuda.SoftmaxBuffers
		}
		attentionSpecer interface {
			DeviceSpec() cuda.AttentionBuffers
			KeyLengths() []int
		}
		scatterSpecer interface{ ScatterOffset() int }
	)
	seen := map[string]bool{}
	for _, c := range cases {
		g := gorgonia.NewGraph()
		loss, wrt, err := c.build(g, tensor.Float64)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := gorgonia.Grad(loss, wrt...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, n := range g.AllNodes() {
			op := n.Op()
			if op == nil {
				continue
			}
			kind, def := machine.OpKind(op), graph.DefOf(op)
			var ok bool
			switch {
			case kind == "nn.gatherOp" || kind == "nn.scatterAddOp":
				ok = true // no parameters
			case strings.HasPrefix(kind, "nn."):
				_, ok = def.(machine.NNSpecer)
			case strings.HasPrefix(kind, "softmax."):
				_, ok = def.(softmaxSpecer)
			case kind == "attention.fwdOp" || kind == "attention.bwdOp":
				_, ok = def.(attentionSpecer)
			case kind == "attention.scatterOp":
				_, ok = def.(scatterSpecer)
			case kind == "attention.takeOp":
				v, is := op.(machine.Viewer)
				_, ok = v.ViewOffset()
				ok = ok && is
			default:
				continue
			}
			seen[kind] = true
			if !ok {
				t.Errorf("%s: %v (%s) gives no device description (description %T)", c.name, op, kind, def)
			}
		}
	}
	for _, k := range []string{"nn.matmulOp", "nn.normOp", "nn.normGradOp", "nn.geluOp", "nn.affineOp", "nn.headsOp",
		"softmax.fwdOp", "softmax.bwdOp", "attention.fwdOp", "attention.bwdOp", "attention.takeOp", "attention.scatterOp"} {
		if !seen[k] {
			t.Errorf("no test graph has an op of kind %s", k)
		}
	}
}
