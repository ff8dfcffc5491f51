package machine

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/flashgorgon/flashgorgon/cuda"
)

// OpTime is one op node's device time in a Profile.
type OpTime struct {
	Node, Op, Kind string
	Shape          tensor.Shape
	// Ms is the node's mean device time per run in milliseconds: from a
	// CUDA event recorded before its kernels to one recorded after them.
	Ms float64
}

// profileLead is the size n of the n×n×n float32 product queued ahead of a profiled run: it
// keeps the device busy (a few ms on an H100) while the host queues the run's kernels and
// events, so that the time between two events is the kernels' and not the host's launching.
const profileLead = 4096

// Profile runs the graph runs times on the CUDA backend, as RunAll does (the inputs' bound
// values are loaded first), with a CUDA event before every op node and one after the last,
// and returns each op node's mean device time, in execution order. The kernels of a run are
// queued behind a long matrix product so that the device runs them back to back: the times
// are those of the kernels (and the events between them), not of launching them. A tool, not
// a training path: the events cost the device about a microsecond per node.
func (m *Machine) Profile(runs int) ([]OpTime, error) {
	if m == nil || m.closed {
		return nil, fmt.Errorf("machine.Profile: the machine is nil or closed")
	}
	if _, ok := m.be.(*cudaBackend); !ok {
		return nil, fmt.Errorf("machine.Profile: the %s backend has no device timer", m.be.Name())
	}
	if runs < 1 {
		return nil, fmt.Errorf("machine.Profile: %d runs, want at least 1", runs)
	}
	t, err := cuda.NewTimer(len(m.steps) + 1)
	if err != nil {
		return nil, fmt.Errorf("machine.Profile: %w", err)
	}
	defer t.Close()
	var lead [3]*cuda.Buffer
	for i := range lead {
		if lead[i], err = cuda.Alloc(cuda.Float32, profileLead*profileLead); err != nil {
			return nil, fmt.Errorf("machine.Profile: %w", err)
		}
		defer lead[i].Free()
		if err := lead[i].Zero(); err != nil {
			return nil, fmt.Errorf("machine.Profile: %w", err)
		}
	}
	gp := cuda.GemmParams{M: profileLead, N: profileLead, K: profileLead, Alpha: 1, A: lead[0], B: lead[1], C: lead[2]}
	sums := make([]float64, len(m.steps))
	for range runs {
		m.ran = false
		err := cuda.Do(func() error {
			for _, v := range m.inputs {
				if err := m.load(v); err != nil {
					return err
				}
			}
			for range 2 {
				if err := cuda.Gemm(gp); err != nil {
					return err
				}
			}
			for i, st := range m.steps {
				if err := t.Mark(i); err != nil {
					return err
				}
				m.cur = st
				if err := m.exec(st); err != nil {
					return m.fail(err)
				}
			}
			m.cur = nil
			return t.Mark(len(m.steps))
		})
		if err != nil {
			return nil, fmt.Errorf("machine.Profile: %w", err)
		}
		for i := range m.steps {
			ms, err := t.Elapsed(i, i+1)
			if err != nil {
				return nil, fmt.Errorf("machine.Profile: %w", err)
			}
			sums[i] += ms
		}
	}
	m.ran = true
	out := make([]OpTime, len(m.steps))
	for i, st := range m.steps {
		n := st.v.n
		out[i] = OpTime{Node: n.Name(), Op: st.op.String(), Kind: OpKind(st.op), Shape: st.v.shape.Clone(), Ms: sums[i] / float64(runs)}
	}
	return out, nil
}
