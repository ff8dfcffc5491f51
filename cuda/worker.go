package cuda

import (
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The device worker: one goroutine, locked to its OS thread, makes every CUDA call of the
// package. A CUDA context is current on one thread; funnelling every call through the worker
// keeps it current wherever the launchers are called from, and serializes the calls so that
// the state below needs no lock.

// state is everything the worker knows about the device. Only the worker touches it.
type state struct {
	ordinal  int
	dev      cuDevice
	ctx      cuContext
	own      bool // ctx was made by cuCtxCreate, not the device's primary context
	live     bool // ctx current on the worker thread
	name     string
	major    int
	minor    int
	smemMax  int // largest dynamic shared memory a block may opt in to
	sms      int
	driver   int
	funcs    map[string]*kernel
	pool     pool
	gen      uint64     // counts the contexts made: a Buffer is valid only in the one it was allocated in
	blas     blasHandle // the cuBLAS handle of this context, 0 until the first product
	blasWork devptr     // the handle's workspace (blasWorkspace bytes)
	// stream is the stream launches, memsets and cuBLAS calls go to: 0 (the default stream),
	// or rec while Capture records; rec is made at the first Capture in this context.
	stream, rec cuStream
}

// kernel is a loaded kernel function and the dynamic shared memory it has been allowed.
type kernel struct {
	name string
	fn   cuFunction
	smem int
}

var (
	jobs      chan func()
	startOnce sync.Once

	selectOnce sync.Once
	selected   bool   // a device was found and opened
	devName    string // the device's name, as Device reports it while it is in use

	// lost is set, with its reason, when a fault left the device unusable for the rest of the
	// process (the driver refuses a new context); the ops then run on the CPU.
	lost       atomic.Bool
	lostReason atomic.Value // string
)

// run executes f on the worker and returns its error, with driver failures turned into *Error
// values naming op. After a failure that leaves the context unusable (a kernel fault) the
// worker drops the context and everything allocated in it, and resets the device's primary
// context, so the next call starts afresh.
func run(op string, f func(s *state) error) error {
	var err error
	dispatch(func() {
		err = ensureContext(&dev)
		if err == nil {
			err = f(&dev)
		}
		var de *drvError
		if errors.As(err, &de) {
			err = &Error{Op: op, Call: de.call, Code: de.code, Name: errorName(de.code), Msg: errorString(de.code)}
			if sticky(de.code) {
				// A kernel fault poisons the context: drop it and try a new one now. Where the
				// driver refuses (it keeps the error for the whole process), the device is lost
				// and the ops go back to the CPU; this call still reports the fault.
				dev.reset()
				if cerr := ensureContext(&dev); cerr != nil {
					lostReason.Store(fmt.Sprintf("%v; then %v", err, cerr))
					lost.Store(true)
					log.Printf("flashgorgon: %s is lost for this process (%v): ops run on the CPU from now on", devName, lostReason.Load())
				}
			}
		}
	})
	return err
}

// dispatch runs fn on the worker and waits for it. Called on the worker itself (inside Do) it
// runs fn there directly: queueing it behind the running job would never return.
func dispatch(fn func()) {
	if onWorker() {
		fn()
		return
	}
	startWorker()
	done := make(chan struct{})
	jobs <- func() {
		fn()
		close(done)
	}
	<-done
}

func startWorker() {
	startOnce.Do(func() {
		jobs = make(chan func())
		go worker()
	})
}

// workerThread is the OS thread id of the worker (0 before it starts, or where thread ids are
// not known): the one thread on which the worker goroutine, locked to it, runs.
var workerThread atomic.Int64

// onWorker reports whether the caller is the worker goroutine.
func onWorker() bool {
	t := workerThread.Load()
	return t > 0 && int64(threadID()) == t
}

// Do runs f on the device worker, so that every call of the package that f makes runs there
// directly instead of being handed over to the worker and waited for, which costs tens of
// microseconds per call (about 14 µs per launch on the H100 machine, BenchmarkOptimizerStep):
// a training step's launches wrapped in one Do cost one hand-over. Other goroutines' calls
// wait until f returns, so f must not wait for a goroutine that calls the package. It returns
// ErrNoDevice without a device, else f's error.
func Do(f func() error) error {
	if !Enabled() {
		return ErrNoDevice
	}
	return run("do", func(*state) error { return f() })
}

// dev is the worker's state.
var dev state

func worker() {
	runtime.LockOSThread() // never unlocked: the thread belongs to the worker for good
	workerThread.Store(int64(threadID()))
	for job := range jobs {
		job()
	}
}

// ensureContext makes a context current on the worker thread after the first call or a
// reset: the device's primary context, or, when that cannot be used again (a kernel fault
// left it broken), a context of the package's own. A context that cannot allocate is not used.
func ensureContext(s *state) error {
	if s.live {
		return nil
	}
	ctx, err := ctxRetain(s.dev)
	if err == nil {
		if err = ctxSetCurrent(ctx); err == nil {
			err = probe()
		}
		if err == nil {
			s.ctx, s.own = ctx, false
		} else {
			ctxRelease(s.dev)
		}
	}
	if err != nil {
		ctx, err2 := ctxCreate(s.dev) // current on this thread from here
		if err2 == nil {
			if err2 = probe(); err2 != nil {
				ctxDestroy(ctx)
			}
		}
		if err2 != nil {
			return err // the primary context's failure says more
		}
		s.ctx, s.own = ctx, true
		log.Printf("flashgorgon: %s: primary context unusable (%v); using a context of our own", devName, err)
	}
	s.live = true
	s.funcs = map[string]*kernel{}
	return nil
}

// probe checks that the current context can allocate device memory.
func probe() error {
	p, err := memAlloc(256)
	if err != nil {
		return err
	}
	return memFree(p)
}

// reset drops the context after a sticky error: a context of our own is destroyed, the
// primary context is reset. Its buffers and modules vanish with it, so they are forgotten,
// not freed; the next call makes a context afresh (ensureContext).
func (s *state) reset() {
	if !s.live {
		return
	}
	if s.own {
		ctxDestroy(s.ctx)
	} else {
		ctxReset(s.dev)
		ctxRelease(s.dev)
	}
	s.pool = pool{}
	poolBytes.Store(0)
	s.gen++
	s.blas, s.blasWork = 0, 0 // destroyed with the context
	s.stream, s.rec = 0, 0
	s.funcs, s.live = nil, false
}

// Enabled reports whether the ops run on a CUDA device. The first call looks for one (unless
// FLASHGORGON_DEVICE=cpu is set), logs one line saying which path was chosen and why, and
// loads nothing else; later calls return the same answer.
func Enabled() bool {
	selectOnce.Do(selectDevice)
	return selected && !lost.Load()
}

// Device names the device the ops run on: "cuda:N (name, sm_XY)" or "cpu" (with the reason
// when a fault lost the device).
func Device() string {
	selectOnce.Do(selectDevice)
	switch {
	case !selected:
		return "cpu"
	case lost.Load():
		return fmt.Sprintf("cpu (%s lost: %v)", devName, lostReason.Load())
	}
	return devName
}

// selectDevice decides, once, whether the ops use a device.
func selectDevice() {
	want := strings.TrimSpace(os.Getenv("FLASHGORGON_DEVICE"))
	ordinal := 0
	switch {
	case want == "cpu":
		log.Printf("flashgorgon: FLASHGORGON_DEVICE=cpu: ops run on the CPU")
		return
	case want == "" || want == "cuda" || want == "gpu":
	case strings.HasPrefix(want, "cuda:"):
		n, err := strconv.Atoi(want[len("cuda:"):])
		if err != nil || n < 0 {
			log.Printf("flashgorgon: FLASHGORGON_DEVICE=%q is not cpu, cuda or cuda:N: ops run on the CPU", want)
			return
		}
		ordinal = n
	default:
		log.Printf("flashgorgon: FLASHGORGON_DEVICE=%q is not cpu, cuda or cuda:N: ops run on the CPU", want)
		return
	}
	var found error
	dispatch(func() { found = openDevice(&dev, ordinal) })
	if found != nil {
		log.Printf("flashgorgon: no CUDA device (%v): ops run on the CPU", found)
		return
	}
	selected = true
	devName = fmt.Sprintf("cuda:%d (%s, sm_%d%d)", ordinal, dev.name, dev.major, dev.minor)
	log.Printf("flashgorgon: ops run on %s, driver %d.%d, %d multiprocessors", devName,
		dev.driver/1000, dev.driver%1000/10, dev.sms)
}

// openDevice loads the driver, picks device ordinal and makes its primary context current on
// the worker thread.
func openDevice(s *state, ordinal int) error {
	if err := drvOpen(); err != nil {
		return err
	}
	if err := drvInit(); err != nil {
		return err
	}
	n, err := deviceCount()
	if err != nil {
		return err
	}
	if ordinal >= n {
		return fmt.Errorf("device cuda:%d asked for, %d present", ordinal, n)
	}
	if s.dev, err = deviceGet(ordinal); err != nil {
		return err
	}
	s.ordinal = ordinal
	if s.name, err = deviceName(s.dev); err != nil {
		return err
	}
	for _, a := range []struct {
		attr int
		dst  *int
	}{{attrComputeMajor, &s.major}, {attrComputeMinor, &s.minor}, {attrSharedOptin, &s.smemMax}, {attrMultiprocessors, &s.sms}} {
		if *a.dst, err = deviceAttr(s.dev, a.attr); err != nil {
			return err
		}
	}
	if s.major < 8 {
		return fmt.Errorf("%s has compute capability %d.%d; the embedded PTX needs 8.0 (Ampere) or newer", s.name, s.major, s.minor)
	}
	if s.driver, err = drvVersion(); err != nil {
		return err
	}
	return ensureContext(s)
}

// function returns the kernel called name from kernels/<module>.cu, loading (JIT-compiling)
// it alone at its first use (ptxKernel), and allows it smem bytes of dynamic shared memory.
func (s *state) function(module, name string, smem int) (*kernel, error) {
	k := s.funcs[name]
	if k == nil {
		src, err := ptxSource(module)
		if err != nil {
			return nil, err
		}
		ptx, err := ptxKernel(src, name)
		if err != nil {
			return nil, fmt.Errorf("%w (module %s)", err, module)
		}
		m, err := moduleLoad(module+"."+name, ptx)
		if err != nil {
			return nil, err
		}
		fn, err := moduleFunction(m, name)
		if err != nil {
			return nil, err
		}
		k = &kernel{name: name, fn: fn, smem: 48 << 10}
		s.funcs[name] = k
	}
	if smem > k.smem {
		if smem > s.smemMax {
			return nil, fmt.Errorf("kernel %s needs %d bytes of shared memory, %s allows %d: %w", name, smem, s.name, s.smemMax, ErrUnsupported)
		}
		if err := funcSetMaxDynamicSmem(k.fn, smem, name); err != nil {
			return nil, err
		}
		k.smem = smem
	}
	return k, nil
}
