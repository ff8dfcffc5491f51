// Command attnbench times flashgorgon's CUDA attention in every precision and PyTorch's
// scaled_dot_product_attention on the same shapes and the same inputs, and prints each one's
// speed beside its error against float64.
//
//	attnbench -torch cuda/cmd/attnbench/sdpa_bench.py
//
// It is an ordinary build (CGO_ENABLED=0 go build ./cuda/cmd/attnbench): on a machine without
// a CUDA device it says "no CUDA device" and exits with status 1.
//
// Shapes: d ∈ {64, 128}, N ∈ {1024, 4096, 16384}, causal and not, H = 16, B·N = 32768.
// Inputs: q, k, v, dO standard normal float32, drawn on the device by cuda.FillNormal
// (counter-based: element i of seed s is a function of (s, i) alone); sdpa_bench.py draws the
// same values with the same formula in PyTorch (the log compares a sum of both q's) and gives
// the bf16 backends those values rounded to bf16.
//
// Ours: each precision of -prec (fma, exact, tf32, bf16: cuda.Precision) through the public
// API: device Buffers, AttentionForwardBuffers and AttentionBackwardBuffers (with the Scratch
// buffer that ForwardScratch and BackwardScratch ask for, and with -planes, the default, the
// Planes that BF16 on Hopper keeps from the forward for the backward), timed with cuda.Timer (CUDA events)
// around the kernels, median of -reps after a warm-up. The forward is timed alone, as inference
// runs it (no Planes kept: no backward follows), and again as training's forward, followed by
// the backward (the log's "train fwd"); the tables' forward column is the first.
// PyTorch: f32 EFFICIENT, bf16 FLASH, bf16 cuDNN (sdpa_bench.py), timed the same way: its
// forward under torch.no_grad(), its forward+backward with autograd.
//
// Errors: the largest |x − x64| / max(1, |x64|) over the checked rows (checkRows: 8 query rows
// and 8 key rows of the last head), against float64 references from the float32 inputs: "err"
// is O's, "gerr" that of dQ, dK and dV. Ours are computed here on the host, PyTorch's by
// sdpa_bench.py on the device in float64; the same rows, the same formula.
//
// TFLOP/s use FlashAttention's convention (shared/ANCHORS.md): forward 4·B·H·N²·d, halved when
// causal; forward+backward 3.5× the forward. Only the matrix products count: our backward,
// which recomputes P and dP in its dQ kernel, does more work than it is credited with.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/internal/benchkit"
)

type shape = benchkit.Shape

// torchRow is one line of sdpa_bench.py's output.
type torchRow struct {
	benchkit.Torch
	DType   string  `json:"dtype"`
	ErrO    float64 `json:"err_o"`
	ErrGrad float64 `json:"err_grad"`
	InSum   float64 `json:"in_sum"`
}

// theirs are the PyTorch columns, in table order.
var theirs = []struct{ dtype, backend, label string }{
	{"f32", "EFFICIENT", "torch f32 EFF"}, {"bf16", "FLASH", "torch bf16 FLASH"}, {"bf16", "CUDNN", "torch bf16 cuDNN"}}

func main() {
	torchScript := flag.String("torch", "", "path of sdpa_bench.py (empty: no PyTorch columns)")
	python := flag.String("python", "python3", "Python with PyTorch")
	reps := flag.Int("reps", 3, "timed repetitions per case (median reported)")
	ns := flag.String("n", "1024,4096,16384", "sequence lengths")
	ds := flag.String("d", "64,128", "head dimensions")
	tokens := flag.Int("tokens", 32768, "B·N")
	heads := flag.Int("h", 16, "heads")
	precs := flag.String("prec", "fma,exact,tf32,bf16", "precisions of ours (fma, exact, tf32, bf16)")
	planes := flag.Bool("planes", true, "bf16 on Hopper: the forward keeps its bfloat16 planes for the backward (AttentionBuffers.Planes)")
	flag.Parse()
	log.SetFlags(0)

	var precisions []cuda.Precision
	for _, f := range strings.Split(*precs, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		pr, err := cuda.ParsePrecision(f)
		if err != nil {
			log.Fatalf("attnbench: -prec: %v", err)
		}
		precisions = append(precisions, pr)
	}
	if !cuda.Enabled() {
		log.Fatalf("attnbench: no CUDA device (%s)", cuda.Device())
	}
	var shapes []shape
	for _, d := range ints(*ds) {
		for _, n := range ints(*ns) {
			for _, causal := range []bool{false, true} {
				shapes = append(shapes, shape{B: max(1, *tokens/n), H: *heads, N: n, D: d, Causal: causal})
			}
		}
	}

	type ours struct {
		res benchResult
		err error
	}
	mine := make([]ours, len(shapes))
	for i, s := range shapes {
		start := time.Now()
		r, err := benchAttention(benchCase{B: s.B, H: s.H, N: s.N, D: s.D, Causal: s.Causal, Reps: *reps, Precisions: precisions, Planes: *planes})
		mine[i] = ours{r, err}
		log.Printf("ours %+v: err %v, q sum %.6f (%.1fs)", s, err, r.InSum, time.Since(start).Seconds())
		for _, pr := range r.Prec {
			log.Printf("ours %+v: %-5v fwd %.3f ms = %.1f TFLOP/s (train fwd %.3f), fwd+bwd %.3f ms = %.1f TFLOP/s, err O %.2g L %.2g grad %.2g (%s)",
				s, pr.Precision, pr.FwdMs, s.FwdFLOPs()/(pr.FwdMs*1e-3)/1e12, pr.FwdTrainMs, pr.FwdBwdMs,
				s.FwdFLOPs()*benchkit.FwdBwdFactor/(pr.FwdBwdMs*1e-3)/1e12, pr.ErrO, pr.ErrL, pr.ErrGrad, strings.Join(pr.Kernels, ", "))
		}
	}

	torch := map[string]torchRow{}
	if *torchScript != "" {
		js, _ := json.Marshal(shapes)
		cmd := exec.Command(*python, *torchScript, string(js), strconv.Itoa(*reps))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			log.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			log.Fatalf("attnbench: %s %s: %v", *python, *torchScript, err)
		}
		err = benchkit.DecodeLines(out, func(r torchRow, line string) {
			log.Printf("torch %s", line)
			torch[key(r.Shape, r.DType, r.Backend)] = r
		}, func(line string, err error) { log.Printf("attnbench: torch output %q: %v", line, err) })
		if err != nil {
			log.Printf("attnbench: reading the PyTorch output: %v", err)
		}
		if err := cmd.Wait(); err != nil {
			log.Printf("attnbench: PyTorch benchmark: %v", err)
		}
	}
	// Same inputs: the sums of the first 2^20 elements of q must agree (up to rounding of the
	// sums themselves).
	for i, s := range shapes {
		for _, c := range theirs {
			if r, ok := torch[key(s, c.dtype, c.backend)]; ok && r.InSum != 0 && mine[i].err == nil {
				if d := math.Abs(r.InSum - mine[i].res.InSum); d > 1e-6*math.Max(1, math.Abs(r.InSum)) {
					log.Printf("attnbench: %+v: PyTorch's q sums to %.9g, ours to %.9g: not the same inputs", s, r.InSum, mine[i].res.InSum)
				}
			}
		}
	}

	fmt.Printf("\nAttention on %s: TFLOP/s (FLOPs: fwd 4·B·H·N²·d, /2 causal; fwd+bwd 3.5× fwd) and error against float64\n", cuda.Device())
	for _, fb := range []bool{false, true} {
		table(shapes, precisions, func(i int) (benchResult, error) { return mine[i].res, mine[i].err }, torch, fb)
	}
	ratios(shapes, func(i int) (benchResult, error) { return mine[i].res, mine[i].err }, torch)
	for i, s := range shapes {
		if mine[i].err != nil {
			fmt.Printf("ours %+v: %v\n", s, mine[i].err)
		}
	}
	for i, s := range shapes {
		if mine[i].err == nil && !s.Causal && s.N == shapes[0].N {
			for _, pr := range mine[i].res.Prec {
				fmt.Printf("kernels d=%d %v: %s\n", s.D, pr.Precision, strings.Join(pr.Kernels, ", "))
			}
		}
	}
	var errs []string
	for _, r := range torch {
		if r.Error != "" && !strings.Contains(strings.Join(errs, "\n"), r.DType+" "+r.Backend+": "+r.Error) {
			errs = append(errs, r.DType+" "+r.Backend+": "+r.Error)
		}
	}
	if len(errs) > 0 {
		fmt.Println("PyTorch cases that did not run (– in the tables):")
		for _, e := range errs {
			fmt.Println("  " + e)
		}
	}
}

// table prints the forward (fb false) or forward+backward TFLOP/s of every precision of ours
// and of PyTorch's backends, each with its error: O's for the forward, the largest of dQ,
// dK, dV for forward+backward.
func table(shapes []shape, precs []cuda.Precision, res func(int) (benchResult, error), torch map[string]torchRow, fb bool) {
	what, mult, errName := "Forward", 1.0, "err O"
	if fb {
		what, mult, errName = "Forward+backward", benchkit.FwdBwdFactor, "err dQ,dK,dV"
	}
	fmt.Printf("\n%s: TFLOP/s (%s)\n\n", what, errName)
	hdr, sep := "| d | N | B | causal |", "|---|---|---|---|"
	for _, p := range precs {
		hdr += fmt.Sprintf(" ours %v |", p)
		sep += "---|"
	}
	for _, c := range theirs {
		hdr += " " + c.label + " |"
		sep += "---|"
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for i, s := range shapes {
		r, err := res(i)
		row := fmt.Sprintf("| %d | %d | %d | %v |", s.D, s.N, s.B, s.Causal)
		// cell is a run's TFLOP/s and error, forward or forward+backward (fb), from its
		// milliseconds and errors; – where it did not run.
		cell := func(ok bool, fwdMs, fwdBwdMs, errO, errGrad float64) string {
			if !ok {
				return " – |"
			}
			ms, e := fwdMs, errO
			if fb {
				ms, e = fwdBwdMs, errGrad
			}
			return fmt.Sprintf(" %s (%.1e) |", num(s.FwdFLOPs()*mult/(ms*1e-3)/1e12), e)
		}
		by := byPrec(r)
		for _, p := range precs {
			pr, ok := by[p]
			row += cell(ok && err == nil, pr.FwdMs, pr.FwdBwdMs, pr.ErrO, pr.ErrGrad)
		}
		for _, c := range theirs {
			t, ok := torch[key(s, c.dtype, c.backend)]
			row += cell(ok && t.Error == "", t.FwdMs, t.FwdBwdMs, t.ErrO, t.ErrGrad)
		}
		fmt.Println(row)
	}
}

// ratios prints the speed ratios time(torch)/time(ours) the targets are stated in, and
// the error ratios err(ours)/err(torch) of the forward's O.
func ratios(shapes []shape, res func(int) (benchResult, error), torch map[string]torchRow) {
	pairs := []struct {
		ours           cuda.Precision
		dtype, backend string
		label          string
		errTarget      bool
	}{
		{cuda.PrecisionBF16, "bf16", "FLASH", "BF16/FLASH", true},
		{cuda.PrecisionBF16, "bf16", "CUDNN", "BF16/cuDNN", false},
		{cuda.PrecisionExact, "f32", "EFFICIENT", "Exact/EFF", true},
		{cuda.PrecisionTF32, "f32", "EFFICIENT", "TF32/EFF", false},
	}
	fmt.Printf("\nRatios: speed time(torch)/time(ours) (above 1: ours faster), fwd | fwd+bwd; error err(ours)/err(torch) of O (target ≤ 2)\n\n")
	hdr, sep := "| d | N | causal |", "|---|---|---|"
	for _, p := range pairs {
		hdr += fmt.Sprintf(" %s fwd | f+b |", p.label)
		sep += "---|---|"
	}
	for _, p := range pairs {
		if p.errTarget {
			hdr += fmt.Sprintf(" %s err O |", p.label)
			sep += "---|"
		}
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for i, s := range shapes {
		r, err := res(i)
		by := byPrec(r)
		row := fmt.Sprintf("| %d | %d | %v |", s.D, s.N, s.Causal)
		var errCols string
		for _, p := range pairs {
			o, ok := by[p.ours]
			t, tok := torch[key(s, p.dtype, p.backend)]
			if !ok || !tok || t.Error != "" || err != nil {
				row += " – | – |"
				if p.errTarget {
					errCols += " – |"
				}
				continue
			}
			row += fmt.Sprintf(" %.2f | %.2f |", t.FwdMs/o.FwdMs, t.FwdBwdMs/o.FwdBwdMs)
			if p.errTarget {
				errCols += fmt.Sprintf(" %.2f |", o.ErrO/t.ErrO)
			}
		}
		fmt.Println(row + errCols)
	}
	fmt.Println()
}

func byPrec(r benchResult) map[cuda.Precision]precisionResult {
	m := map[cuda.Precision]precisionResult{}
	for _, p := range r.Prec {
		m[p.Precision] = p
	}
	return m
}

func key(s shape, dtype, backend string) string {
	return fmt.Sprintf("%d/%d/%d/%d/%v/%s/%s", s.B, s.H, s.N, s.D, s.Causal, dtype, backend)
}

func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f", x)
}

func ints(s string) []int {
	v, err := benchkit.Ints(s)
	if err != nil {
		log.Fatalf("attnbench: %v", err)
	}
	return v
}
