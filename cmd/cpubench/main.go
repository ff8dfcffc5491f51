// Command cpubench times flashgorgon's CPU attention and softmax ops and PyTorch's CPU
// scaled_dot_product_attention side by side, at the same thread counts on the same CPU, and
// prints one Markdown table with the ratios.
//
//	go build -o cpubench ./cmd/cpubench
//	./cpubench -threads 2,16 -torch cmd/cpubench/sdpa_cpu.py
//
// scripts/cpu-bench.sh runs it together with the machine's FMA peak and streaming bandwidth
// (shared/tools/peak.c) and writes the log. cpubench pins nothing itself; the script runs one
// cpubench per thread count under taskset, on the same CPUs as that count's peak.c, so that
// cpubench's own peak, our runs and the PyTorch process it starts (which inherits the mask)
// share those CPUs. Without -torch only our columns are printed.
//
// Ours: the fused op through package machine (buffers planned once), float32, GOMAXPROCS = threads, inputs
// standard normal, the median of -reps runs after a warm-up; forward+backward is one run of
// the graph with the gradient of Σ o∘w. PyTorch: sdpa_cpu.py with torch.set_num_threads(threads),
// the FLASH and MATH backends, float32, timed the same way, on each shape right before ours
// (one sdpa_cpu.py process per thread count reads the shapes from its stdin), so that a
// shared machine's load weighs on both sides of a ratio alike. -cpuprofile profiles our runs
// (a machine without Go can bring the file back for `go tool pprof`). GFLOP/s use FlashAttention's
// convention (shared/ANCHORS.md): forward 4·B·H·N²·d, halved when causal; forward+backward
// 3.5× the forward. The softmax row is bytes read + written (2·4·rows·cols) per second.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/graph"
	"github.com/flashgorgon/flashgorgon/internal/benchkit"
	"github.com/flashgorgon/flashgorgon/internal/isa"
	"github.com/flashgorgon/flashgorgon/internal/kernels/gemm"
	"github.com/flashgorgon/flashgorgon/machine"
	"github.com/flashgorgon/flashgorgon/ops/attention"
	"github.com/flashgorgon/flashgorgon/ops/softmax"
)

// shape is one attention problem: q, k, v [B,H,N,d].
type shape struct{ benchkit.Shape }

func (s shape) String() string {
	c := "no"
	if s.Causal {
		c = "yes"
	}
	return fmt.Sprintf("%d,%d,%d,%d,%s", s.B, s.H, s.N, s.D, c)
}

// defaultShapes are BenchmarkAttention's (ops/attention/bench_test.go).
var defaultShapes = []shape{
	{benchkit.Shape{B: 1, H: 8, N: 1024, D: 64}}, {benchkit.Shape{B: 1, H: 8, N: 1024, D: 64, Causal: true}},
	{benchkit.Shape{B: 1, H: 8, N: 4096, D: 64}}, {benchkit.Shape{B: 1, H: 8, N: 4096, D: 64, Causal: true}},
	{benchkit.Shape{B: 1, H: 8, N: 2048, D: 128}},
}

// torchRow is one line of sdpa_cpu.py's output.
type torchRow struct {
	benchkit.Shape
	Threads  int     `json:"threads"`
	Backend  string  `json:"backend"`
	FwdMs    float64 `json:"fwd_ms"`
	FwdBwdMs float64 `json:"fwdbwd_ms"`
	Error    string  `json:"error"`
}

func main() {
	threadList := flag.String("threads", "2", "comma-separated thread counts (GOMAXPROCS for ours, torch.set_num_threads for PyTorch)")
	torchScript := flag.String("torch", "", "path of sdpa_cpu.py (empty: no PyTorch columns)")
	python := flag.String("python", "python3", "Python with PyTorch")
	reps := flag.Int("reps", 3, "timed repetitions per case (median reported)")
	shapeList := flag.String("shapes", "", "B,H,N,d,causal(0|1) shapes separated by ';' (default: BenchmarkAttention's five)")
	doSoftmax := flag.Bool("softmax", true, "also time the softmax op on (4096,4096) float32")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of our runs (not PyTorch's) to this file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("cpubench: ")
	// The ops pick a CUDA device when one is present: this program measures the CPU path.
	if err := os.Setenv("FLASHGORGON_DEVICE", "cpu"); err != nil {
		log.Fatal(err)
	}

	threads, err := benchkit.Ints(*threadList)
	if err != nil || len(threads) == 0 || slices.ContainsFunc(threads, func(t int) bool { return t < 1 }) {
		log.Fatalf("-threads %q: want positive integers separated by commas", *threadList)
	}
	if *reps < 1 {
		log.Fatalf("-reps %d: want at least 1", *reps)
	}
	shapes := defaultShapes
	if *shapeList != "" {
		if shapes, err = parseShapes(*shapeList); err != nil {
			log.Fatalf("-shapes: %v", err)
		}
	}

	fmt.Printf("# cpubench %s\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Printf("- CPU: %s (%d logical CPUs)\n- kernels: %s; %s\n- command: %s\n\n",
		cpuModel(), runtime.NumCPU(), isa.Describe(), runtime.Version(), strings.Join(os.Args, " "))

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				log.Print(err)
			}
		}()
	}

	// The FMA peak of the kernels' level at each thread count, measured here, in this run: the
	// denominator of "% of peak" (scripts/cpu-bench.sh's peak.c measures the AVX2 loop only).
	peaks := map[int]float64{}
	for _, t := range threads {
		runtime.GOMAXPROCS(t)
		peaks[t] = gemm.PeakFMA(t, 300*time.Millisecond)
		fmt.Printf("- %s FMA peak at %d threads: %.1f GFLOP/s\n", isa.Get(), t, peaks[t])
	}
	fmt.Println()
	fmt.Println("| threads | B,H,N,d,causal | ours fwd / fwd+bwd GFLOP/s (% of peak) | torch FLASH fwd / fwd+bwd | ours ÷ FLASH | torch MATH fwd / fwd+bwd | ours ÷ MATH |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, t := range threads {
		runtime.GOMAXPROCS(t)
		var tp *torchProc
		if *torchScript != "" {
			tp = startTorch(*python, *torchScript, t, *reps)
		}
		for _, s := range shapes {
			// PyTorch on this shape right before ours: a shared machine's
			// load then weighs on both sides of the ratio alike.
			torch := tp.run(s)
			fwd := s.FwdFLOPs() / timeAttention(s, false, *reps).Seconds() / 1e9
			fb := benchkit.FwdBwdFactor * s.FwdFLOPs() / timeAttention(s, true, *reps).Seconds() / 1e9
			row := fmt.Sprintf("| %d | %s | %.1f / %.1f", t, s, fwd, fb)
			if pk := peaks[t]; pk > 0 {
				row += fmt.Sprintf(" (%.0f%% / %.0f%%)", 100*fwd/pk, 100*fb/pk)
			}
			for _, backend := range []string{"FLASH", "MATH"} {
				tr, ok := findTorch(torch, s, t, backend)
				switch {
				case !ok:
					row += " | – | –"
				case tr.Error != "":
					row += fmt.Sprintf(" | %s | –", tr.Error)
				default:
					tf, tfb := s.FwdFLOPs()/tr.FwdMs/1e6, benchkit.FwdBwdFactor*s.FwdFLOPs()/tr.FwdBwdMs/1e6
					row += fmt.Sprintf(" | %.1f / %.1f | %.2f / %.2f", tf, tfb, fwd/tf, fb/tfb)
				}
			}
			fmt.Println(row + " |")
		}
		tp.close()
	}
	if *doSoftmax {
		fmt.Println()
		fmt.Println("| threads | softmax op (4096,4096) float32, GB/s read+written |")
		fmt.Println("|---|---|")
		for _, t := range threads {
			runtime.GOMAXPROCS(t)
			fmt.Printf("| %d | %.2f |\n", t, softmaxGBs(4096, 4096, *reps))
		}
	}
}

// timeAttention returns the median time of one run of the fused op's graph (forward, or
// forward and the backward of Σ o∘w).
func timeAttention(s shape, backward bool, reps int) time.Duration {
	rng := rand.New(rand.NewSource(1))
	g := gorgonia.NewGraph()
	q := graph.Input(g, "q", graph.RandTensor[float32](rng, s.B, s.H, s.N, s.D))
	k := graph.Input(g, "k", graph.RandTensor[float32](rng, s.B, s.H, s.N, s.D))
	v := graph.Input(g, "v", graph.RandTensor[float32](rng, s.B, s.H, s.N, s.D))
	o, err := attention.Attention(q, k, v, attention.Options{Causal: s.Causal})
	if err != nil {
		log.Fatal(err)
	}
	if backward {
		w := graph.Input(g, "w", graph.RandTensor[float32](rng, s.B, s.H, s.N, s.D))
		loss := gorgonia.Must(gorgonia.Sum(gorgonia.Must(gorgonia.HadamardProd(o, w))))
		if _, err := gorgonia.Grad(loss, q, k, v); err != nil {
			log.Fatal(err)
		}
	}
	vm, err := machine.New(g)
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Close()
	return median(reps, func() {
		if err := vm.RunAll(); err != nil {
			log.Fatal(err)
		}
	})
}

// softmaxGBs times the softmax op along the last axis of a rows×cols float32 matrix.
func softmaxGBs(rows, cols, reps int) float64 {
	rng := rand.New(rand.NewSource(1))
	g := gorgonia.NewGraph()
	x := graph.Input(g, "x", graph.RandTensor[float32](rng, rows, cols))
	if _, err := softmax.Softmax(x, -1); err != nil {
		log.Fatal(err)
	}
	vm, err := machine.New(g)
	if err != nil {
		log.Fatal(err)
	}
	defer vm.Close()
	t := median(reps, func() {
		if err := vm.RunAll(); err != nil {
			log.Fatal(err)
		}
	})
	return 2 * 4 * float64(rows) * float64(cols) / t.Seconds() / 1e9
}

// median runs f once to warm up, collects the garbage, then returns the median of reps timed runs.
func median(reps int, f func()) time.Duration {
	f()
	runtime.GC()
	ts := make([]time.Duration, reps)
	for i := range ts {
		t0 := time.Now()
		f()
		ts[i] = time.Since(t0)
	}
	slices.Sort(ts)
	return ts[len(ts)/2]
}

// torchProc is sdpa_cpu.py running at one thread count, reading shapes from its stdin ("-"
// mode) and answering each with one row per backend. A nil *torchProc (no -torch, or a
// failure) answers nothing: the PyTorch columns stay empty.
type torchProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  bytes.Buffer
	threads int
}

// startTorch starts sdpa_cpu.py with torch.set_num_threads(threads).
func startTorch(python, script string, threads, reps int) *torchProc {
	tp := &torchProc{threads: threads}
	tp.cmd = exec.Command(python, script, "--threads", strconv.Itoa(threads), "--reps", strconv.Itoa(reps), "-")
	tp.cmd.Stderr = &tp.stderr
	var err error
	if tp.in, err = tp.cmd.StdinPipe(); err != nil {
		log.Fatal(err)
	}
	out, err := tp.cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	tp.out = bufio.NewScanner(out)
	if err := tp.cmd.Start(); err != nil {
		log.Printf("PyTorch at %d threads: %v", threads, err)
		return nil
	}
	return tp
}

// run times shape s on every backend (two rows: FLASH and MATH); on a failure it reports it,
// stops the process and answers nothing from then on.
func (tp *torchProc) run(s shape) []torchRow {
	if tp == nil || tp.cmd == nil {
		return nil
	}
	js, err := json.Marshal([]shape{s})
	if err != nil {
		log.Fatal(err)
	}
	var rows []torchRow
	if _, err := fmt.Fprintf(tp.in, "%s\n", js); err == nil {
		for len(rows) < 2 && tp.out.Scan() {
			var r torchRow
			if err := json.Unmarshal(tp.out.Bytes(), &r); err != nil {
				log.Printf("PyTorch output %q: %v", tp.out.Text(), err)
				continue
			}
			rows = append(rows, r)
		}
	}
	if len(rows) < 2 {
		log.Printf("PyTorch at %d threads on %v: %d rows: %s", tp.threads, s, len(rows), strings.TrimSpace(tp.stderr.String()))
		tp.close()
	}
	return rows
}

// close ends the process (end of its input) and waits for it.
func (tp *torchProc) close() {
	if tp == nil || tp.cmd == nil {
		return
	}
	tp.in.Close()
	if err := tp.cmd.Wait(); err != nil {
		log.Printf("PyTorch at %d threads: %v: %s", tp.threads, err, strings.TrimSpace(tp.stderr.String()))
	}
	tp.cmd = nil
}

func findTorch(rows []torchRow, s shape, threads int, backend string) (torchRow, bool) {
	for _, r := range rows {
		if r.Shape == s.Shape && r.Threads == threads && r.Backend == backend {
			return r, true
		}
	}
	return torchRow{}, false
}

func parseShapes(s string) ([]shape, error) {
	var out []shape
	for _, f := range strings.Split(s, ";") {
		i := strings.LastIndex(f, ",")
		if i < 0 {
			return nil, fmt.Errorf("%q: want B,H,N,d,causal with positive sizes and causal 0 or 1", f)
		}
		causal := strings.TrimSpace(f[i+1:])
		v, err := benchkit.Ints(f[:i])
		if err != nil || len(v) != 4 || (causal != "0" && causal != "1") {
			return nil, fmt.Errorf("%q: want B,H,N,d,causal with positive sizes and causal 0 or 1", f)
		}
		out = append(out, shape{benchkit.Shape{B: v[0], H: v[1], N: v[2], D: v[3], Causal: causal == "1"}})
	}
	return out, nil
}

// cpuModel reads the CPU's name from /proc/cpuinfo (Linux); elsewhere it says so.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH + " (no /proc/cpuinfo)"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
