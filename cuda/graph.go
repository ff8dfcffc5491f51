package cuda

import (
	"fmt"
	"math"
)

// Recording and replaying a sequence of launches (CUDA graphs). Capture runs a function once
// with every launch, memset and cuBLAS product that it makes recorded on a stream of the
// package's own instead of run; Graph.Launch then replays the whole sequence with one driver
// call. The recorded launches keep their arguments (buffer addresses, sizes, scalars), so
// what changes from one replay to the next must live in device memory that the host writes
// before the replay: a batch's tokens uploaded into the same buffer, or the learning rate that
// ParamGroup.AdamWScheduled reads.
//
// The recording stream is a blocking stream (made without CU_STREAM_NON_BLOCKING): work on the
// default stream, where every other call of the package goes, waits for a replay before it and
// a replay waits for the work before it, so uploads, launches and downloads keep their order.

// CUstreamCaptureMode: only the worker thread's calls are checked while it records (every CUDA
// call of the package is made there).
const captureThreadLocal = 1

// Graph is a recorded sequence of launches (an executable CUDA graph), made by Capture.
type Graph struct {
	graph cuGraph
	exec  cuGraphExec
	gen   uint64 // the context it was made in
}

// Capture runs f on the worker and records, instead of running, the launches, memsets and
// cuBLAS products that f makes through the package; it returns them as a Graph to replay with
// Launch. f must do nothing else on the device: a copy between host and device, an allocation
// or a synchronization while recording is refused by the driver, which ends the recording, and
// Capture then returns an error (f's own, or the driver's); nothing f launched ran then. The
// recording is the same launches as a run of f: no different kernels, no different order.
func Capture(f func() error) (*Graph, error) {
	if !Enabled() {
		return nil, ErrNoDevice
	}
	var g *Graph
	err := run("graph capture", func(s *state) error {
		if cuStreamCreate == nil || cuStreamBeginCapture == nil || cuGraphInstantiateWithFlags == nil {
			return fmt.Errorf("cuda: this driver has no stream capture (CUDA 11.4 or later needed): %w", ErrUnsupported)
		}
		if s.stream != 0 {
			return fmt.Errorf("cuda: Capture called while recording")
		}
		if s.rec == 0 {
			var st cuStream
			if err := check(cuStreamCreate(&st, 0), "cuStreamCreate"); err != nil {
				return err
			}
			s.rec = st
		}
		if _, err := s.handle(); err != nil {
			return err
		}
		// From here on the launches, memsets and products go to the recording stream.
		s.stream = s.rec
		if err := s.blasStream(s.rec); err != nil {
			s.stream = 0
			return err
		}
		defer func() {
			s.stream = 0
			s.blasStream(0)
		}()
		if err := check(cuStreamBeginCapture(s.rec, captureThreadLocal), "cuStreamBeginCapture"); err != nil {
			return err
		}
		ferr := f()
		var graph cuGraph
		eerr := check(cuStreamEndCapture(s.rec, &graph), "cuStreamEndCapture")
		if ferr != nil || eerr != nil {
			if graph != 0 {
				cuGraphDestroy(graph)
			}
			if ferr != nil {
				return ferr
			}
			return eerr
		}
		var exec cuGraphExec
		if err := check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags"); err != nil {
			cuGraphDestroy(graph)
			return err
		}
		g = &Graph{graph: graph, exec: exec, gen: s.gen}
		return nil
	})
	return g, err
}

// Launch replays g: its launches run after the work queued before (on the default stream), and
// the package's later calls (a Download) wait for them. It does not wait.
func (g *Graph) Launch() error {
	if g == nil || g.exec == 0 {
		return fmt.Errorf("cuda: Graph.Launch: nil or freed graph")
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run("graph launch", func(s *state) error {
		if g.gen != s.gen {
			return fmt.Errorf("cuda: Graph.Launch: the graph was recorded in a device context since lost")
		}
		return check(cuGraphLaunch(g.exec, s.rec), "cuGraphLaunch")
	})
}

// Free releases g (waiting for nothing: the driver keeps a graph being replayed until it is
// done).
func (g *Graph) Free() error {
	if g == nil || g.exec == 0 {
		return fmt.Errorf("cuda: Graph.Free: nil or freed graph")
	}
	exec, graph := g.exec, g.graph
	g.exec, g.graph = 0, 0
	if !Enabled() {
		return nil
	}
	return run("graph free", func(s *state) error {
		if g.gen != s.gen {
			return nil // gone with its context
		}
		err := check(cuGraphExecDestroy(exec), "cuGraphExecDestroy")
		if err2 := check(cuGraphDestroy(graph), "cuGraphDestroy"); err == nil {
			err = err2
		}
		return err
	})
}

// MemInfo returns the device's free and total memory in bytes (cuMemGetInfo): the whole
// device's, not only the package's (MemoryInUse).
func MemInfo() (free, total int64, err error) {
	if !Enabled() {
		return 0, 0, ErrNoDevice
	}
	err = run("memory info", func(*state) error {
		var f, t uintptr
		if err := check(cuMemGetInfo(&f, &t), "cuMemGetInfo"); err != nil {
			return err
		}
		free, total = int64(f), int64(t)
		return nil
	})
	return free, total, err
}

// AdamWSchedule returns the values of one AdamW step that change from step to step, as
// ParamGroup.AdamWScheduled reads them from its Float64 [3] buffer: the learning rate and the
// bias corrections c1 = 1 − β1ᵗ, c2 = 1 − β2ᵗ of step t ≥ 1.
func AdamWSchedule(lr, beta1, beta2 float64, step int) [3]float64 {
	return [3]float64{lr, 1 - math.Pow(beta1, float64(step)), 1 - math.Pow(beta2, float64(step))}
}
