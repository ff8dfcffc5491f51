// Command attnbench times flashgorgon's CUDA attention kernels and PyTorch's
// scaled_dot_product_attention on the same shapes and prints one table.
//
//	attnbench -torch cuda/cmd/attnbench/sdpa_bench.py
//
// It is an ordinary build (CGO_ENABLED=0 go build ./cuda/cmd/attnbench): on a machine without
// a CUDA device it says "no CUDA device" and exits with status 1.
//
// Shapes: d ∈ {64, 128}, N ∈ {1024, 4096, 16384}, causal and not, H = 16, B·N = 32768. Our
// kernels run in float32 (their I/O type; float64 with -f64); PyTorch runs each SDPA backend in
// float32 and bfloat16 where it can (FLASH and cuDNN take no float32). Every time is the median
// of -reps runs timed with CUDA events on device-resident inputs, after a warm-up. Before its
// times are printed, each of our cases is checked on sampled rows of O, L, dQ, dK and dV
// against float64 references (column "check").
//
// With -prec (default exact,tf32,bf16) it also times the float32 forward of every tensor-core
// kernel of those precisions (cuda.Precision; each checked on sampled rows of O and L against
// float64) and prints a second table: the forward by precision (the kernel
// AttentionForwardBuffers runs for each) beside the FMA kernel and PyTorch's forwards; the log
// lines name the kernels. The harness (bench.go) uses the package's public API only: device
// Buffers, AttentionForwardBuffers and AttentionBackwardBuffers, and cuda.Timer (CUDA events)
// as the clock.
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
	"strings"
	"time"

	"github.com/flashgorgon/flashgorgon/cuda"
	"github.com/flashgorgon/flashgorgon/internal/benchkit"
)

type shape = benchkit.Shape

// torchRow is one line of sdpa_bench.py's output.
type torchRow struct {
	benchkit.Torch
	DType string `json:"dtype"`
}

func main() {
	torchScript := flag.String("torch", "", "path of sdpa_bench.py (empty: no PyTorch columns)")
	python := flag.String("python", "python3", "Python with PyTorch")
	reps := flag.Int("reps", 5, "timed repetitions per case (median reported)")
	f64 := flag.Bool("f64", false, "time our float64 kernels instead of float32")
	ns := flag.String("n", "1024,4096,16384", "sequence lengths")
	ds := flag.String("d", "64,128", "head dimensions")
	tokens := flag.Int("tokens", 32768, "B·N")
	heads := flag.Int("h", 16, "heads")
	precs := flag.String("prec", "exact,tf32,bf16", "forward precisions of ours also timed (fma, exact, tf32, bf16; empty: none)")
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
		r, err := benchAttention(benchCase{B: s.B, H: s.H, N: s.N, D: s.D, Causal: s.Causal, F64: *f64,
			Reps: *reps, CheckRows: 8, Precisions: precisions})
		mine[i] = ours{r, err}
		log.Printf("ours %+v: fwd %.3f ms, fwd+bwd %.3f ms, check %.2g, err %v (%.1fs)",
			s, r.FwdMs, r.FwdBwdMs, r.CheckErr, err, time.Since(start).Seconds())
		for _, pr := range r.Prec {
			log.Printf("ours %+v: %v fwd %.3f ms = %.1f TFLOP/s (%s), check %.2g", s, pr.Precision, pr.FwdMs,
				s.FwdFLOPs()/(pr.FwdMs*1e-3)/1e12, pr.Kernel, pr.CheckErr)
		}
	}

	torch := map[string]torchRow{}
	if *torchScript != "" {
		js, _ := json.Marshal(shapes)
		cmd := exec.Command(*python, *torchScript, string(js))
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

	ourType := "f32"
	if *f64 {
		ourType = "f64"
	}
	cols := []struct{ dtype, backend string }{{"f32", "EFFICIENT"}, {"f32", "MATH"}, {"bf16", "FLASH"}, {"bf16", "CUDNN"}, {"bf16", "EFFICIENT"}}
	fmt.Printf("\nAttention TFLOP/s on %s (fwd | fwd+bwd; FLOPs: fwd 4·B·H·N²·d, /2 causal; fwd+bwd 3.5× fwd)\n\n", cuda.Device())
	hdr := fmt.Sprintf("| d | N | B | causal | ours %s fwd | ours %s f+b | check |", ourType, ourType)
	sep := "|---|---|---|---|---|---|---|"
	for _, c := range cols {
		hdr += fmt.Sprintf(" torch %s %s fwd | f+b |", c.dtype, c.backend)
		sep += "---|---|"
	}
	hdr += " ours/torch-f32-EFF fwd | f+b | ours/torch-bf16-FLASH fwd | f+b |"
	sep += "---|---|---|---|"
	fmt.Println(hdr)
	fmt.Println(sep)
	for i, s := range shapes {
		fl := s.FwdFLOPs()
		tf := func(ms float64, mult float64) float64 {
			if ms <= 0 {
				return math.NaN()
			}
			return fl * mult / (ms * 1e-3) / 1e12
		}
		m := mine[i]
		of, ofb := tf(m.res.FwdMs, 1), tf(m.res.FwdBwdMs, benchkit.FwdBwdFactor)
		check := fmt.Sprintf("%.1e", m.res.CheckErr)
		if m.err != nil {
			of, ofb, check = math.NaN(), math.NaN(), "error"
		}
		row := fmt.Sprintf("| %d | %d | %d | %v | %s | %s | %s |", s.D, s.N, s.B, s.Causal, num(of), num(ofb), check)
		for _, c := range cols {
			r, ok := torch[key(s, c.dtype, c.backend)]
			if !ok || r.Error != "" {
				row += " – | – |"
				continue
			}
			row += fmt.Sprintf(" %s | %s |", num(tf(r.FwdMs, 1)), num(tf(r.FwdBwdMs, benchkit.FwdBwdFactor)))
		}
		for _, c := range []struct{ dtype, backend string }{{"f32", "EFFICIENT"}, {"bf16", "FLASH"}} {
			r, ok := torch[key(s, c.dtype, c.backend)]
			if !ok || r.Error != "" || m.err != nil {
				row += " – | – |"
				continue
			}
			row += fmt.Sprintf(" %.2f | %.2f |", r.FwdMs/m.res.FwdMs, r.FwdBwdMs/m.res.FwdBwdMs)
		}
		fmt.Println(row)
	}
	fmt.Println()
	if len(precisions) > 0 {
		precisionTable(shapes, precisions, func(i int) benchResult { return mine[i].res }, func(i int) error { return mine[i].err }, torch)
	}
	for i, s := range shapes {
		if mine[i].err != nil {
			fmt.Printf("ours %+v: %v\n", s, mine[i].err)
		}
	}
	if len(shapes) > 0 && mine[0].err == nil {
		fmt.Printf("kernels (d=%d): %s\n", shapes[0].D, strings.Join(mine[0].res.Kernels, ", "))
	}
	var errs []string
	for _, r := range torch {
		if r.Error != "" && !strings.Contains(strings.Join(errs, "\n"), r.DType+" "+r.Backend+": "+r.Error) {
			errs = append(errs, r.DType+" "+r.Backend+": "+r.Error)
		}
	}
	if len(errs) > 0 {
		fmt.Println("PyTorch cases that did not run (– in the table):")
		for _, e := range errs {
			fmt.Println("  " + e)
		}
	}
	fmt.Println("ratios are time(torch)/time(ours): above 1 means ours is faster")
}

// precisionTable prints the forward of every precision of ours beside the FMA kernel and
// PyTorch's forwards: TFLOP/s, and the largest error of the sampled rows of O and L against
// float64 (relative to max(1, |value|)).
func precisionTable(shapes []shape, precs []cuda.Precision, res func(int) benchResult, errs func(int) error, torch map[string]torchRow) {
	fmt.Printf("Forward by precision, TFLOP/s (error of sampled rows of O, L against float64)\n\n")
	hdr := "| d | N | B | causal | ours fma fwd (check) |"
	sep := "|---|---|---|---|---|"
	for _, p := range precs {
		hdr += fmt.Sprintf(" ours %v fwd (err) |", p)
		sep += "---|"
	}
	tcols := []struct{ dtype, backend string }{{"f32", "EFFICIENT"}, {"bf16", "FLASH"}, {"bf16", "CUDNN"}}
	for _, c := range tcols {
		hdr += fmt.Sprintf(" torch %s %s fwd |", c.dtype, c.backend)
		sep += "---|"
	}
	for _, p := range precs {
		hdr += fmt.Sprintf(" %v/fma | %v/torch-f32-EFF | %v/torch-bf16-FLASH |", p, p, p)
		sep += "---|---|---|"
	}
	fmt.Println(hdr)
	fmt.Println(sep)
	for i, s := range shapes {
		r := res(i)
		tf := func(ms float64) float64 {
			if ms <= 0 || errs(i) != nil {
				return math.NaN()
			}
			return s.FwdFLOPs() / (ms * 1e-3) / 1e12
		}
		row := fmt.Sprintf("| %d | %d | %d | %v | %s (%.1e) |", s.D, s.N, s.B, s.Causal, num(tf(r.FwdMs)), r.CheckErr)
		byPrec := map[cuda.Precision]precisionResult{}
		for _, pr := range r.Prec {
			byPrec[pr.Precision] = pr
		}
		for _, p := range precs {
			pr, ok := byPrec[p]
			if !ok {
				row += " – |"
				continue
			}
			row += fmt.Sprintf(" %s (%.1e) |", num(tf(pr.FwdMs)), pr.CheckErr)
		}
		tms := func(c struct{ dtype, backend string }) float64 {
			t, ok := torch[key(s, c.dtype, c.backend)]
			if !ok || t.Error != "" {
				return math.NaN()
			}
			return t.FwdMs
		}
		for _, c := range tcols {
			row += fmt.Sprintf(" %s |", num(tf(tms(c))))
		}
		ratio := func(theirs, ours float64) string {
			if math.IsNaN(theirs) || ours <= 0 || errs(i) != nil {
				return "–"
			}
			return fmt.Sprintf("%.2f", theirs/ours)
		}
		for _, p := range precs {
			ms := byPrec[p].FwdMs
			row += fmt.Sprintf(" %s | %s | %s |", ratio(r.FwdMs, ms), ratio(tms(tcols[0]), ms), ratio(tms(tcols[1]), ms))
		}
		fmt.Println(row)
	}
	fmt.Println()
}

func key(s shape, dtype, backend string) string {
	return fmt.Sprintf("%d/%d/%d/%d/%v/%s/%s", s.B, s.H, s.N, s.D, s.Causal, dtype, backend)
}

func num(x float64) string {
	if math.IsNaN(x) {
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
