package nn

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/flashgorgon/flashgorgon/machine"
)

// BenchmarkCUDAStepProfile says where a training step's device time goes, at the two
// configurations of scripts/train-bench.sh (vocabulary 96, float32): each op node of the
// training graph timed by CUDA events around its kernels (machine.Profile, the kernels queued
// back to back), one run per iteration. It reports the sum over the nodes per run
// (graph-ms/run) and logs the time by op kind and the costliest nodes grouped by op and
// shape; the optimizer's kernels (norm, clip, AdamW) are not in the graph and not counted.
// Run it with -test.v: without it the testing package cuts a benchmark's log to its first
// lines. The events between the nodes cost the device about a microsecond each, so the sum is
// a little above a replayed step's graph.
func BenchmarkCUDAStepProfile(b *testing.B) {
	needCUDA(b)
	for _, c := range trainBenchConfigs {
		b.Run(c.name, func(b *testing.B) {
			r, opt, _ := deviceRunner(b, c.cfg, c.batch, true)
			defer r.Close()
			tok, tgt := batchOf(rand.New(rand.NewSource(2)), c.batch*c.cfg.Context, c.cfg.Vocab)
			for range 2 { // modules loaded, cuBLAS set up, the step recorded
				if _, _, err := r.TrainStep(opt, 1e-3, 1, tok, tgt, nil); err != nil {
					b.Fatal(err)
				}
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if err := r.bind(tok, tgt, nil); err != nil {
				b.Fatal(err)
			}
			var sum []machine.OpTime
			runs := 0
			b.ResetTimer()
			for b.Loop() {
				ts, err := r.vm.Profile(1)
				if err != nil {
					b.Fatal(err)
				}
				if sum == nil {
					sum = ts
				} else {
					for i := range ts {
						sum[i].Ms += ts[i].Ms
					}
				}
				runs++
			}
			b.StopTimer()
			total := 0.0
			for i := range sum {
				sum[i].Ms /= float64(runs)
				total += sum[i].Ms
			}
			b.ReportMetric(total, "graph-ms/run")
			b.ReportMetric(float64(len(sum)), "nodes/run")
			b.Log(profileTable(sum, total))
		})
	}
}

// profileTable formats op times by op kind, and the costliest groups of nodes with one op and
// shape.
func profileTable(ts []machine.OpTime, total float64) string {
	type group struct {
		name string
		n    int
		ms   float64
	}
	add := func(m map[string]*group, k string, t machine.OpTime) {
		g := m[k]
		if g == nil {
			g = &group{name: k}
			m[k] = g
		}
		g.n++
		g.ms += t.Ms
	}
	kinds, ops := map[string]*group{}, map[string]*group{}
	for _, t := range ts {
		add(kinds, t.Kind, t)
		op := t.Op
		if len(op) > 70 {
			op = op[:70]
		}
		add(ops, fmt.Sprintf("%s %v", op, t.Shape), t)
	}
	sorted := func(m map[string]*group) []*group {
		var s []*group
		for _, g := range m {
			s = append(s, g)
		}
		sort.Slice(s, func(i, j int) bool { return s[i].ms > s[j].ms })
		return s
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d op nodes, %.3f ms per run\n\n| op kind | nodes | ms/run | share |\n|---|---|---|---|\n", len(ts), total)
	for _, g := range sorted(kinds) {
		fmt.Fprintf(&sb, "| %s | %d | %.3f | %.1f%% |\n", g.name, g.n, g.ms, 100*g.ms/total)
	}
	fmt.Fprintf(&sb, "\n| op and output shape | nodes | ms/run | µs each | share |\n|---|---|---|---|---|\n")
	for i, g := range sorted(ops) {
		if i == 45 {
			break
		}
		fmt.Fprintf(&sb, "| %s | %d | %.3f | %.1f | %.1f%% |\n", strings.ReplaceAll(g.name, "|", "/"), g.n, g.ms, 1e3*g.ms/float64(g.n), 100*g.ms/total)
	}
	return sb.String()
}

// TestDeviceFusedOps: a Runner on the GPU builds the fused graph, as on the CPU (the CUDA
// backend runs nn's fused ops: machine.Native), each linear layer with a bias one linearOp
// and the loss one xentOp with its gradient, and every node runs on the device.
func TestDeviceFusedOps(t *testing.T) {
	needCUDA(t)
	cfg := Config{Vocab: 13, Context: 8, Layers: 2, Heads: 2, Width: 16, MLPRatio: 4}
	r, _, _ := deviceRunner(t, cfg, 2, true)
	defer r.Close()
	kinds := map[string]int{}
	for _, n := range r.Scope.G.AllNodes() {
		if n.Op() != nil {
			kinds[machine.OpKind(n.Op())]++
		}
	}
	// Per block the attention's QKV and output projections and the MLP's two layers.
	for kind, want := range map[string]int{"nn.linearOp": 4 * cfg.Layers, "nn.xentOp": 1, "nn.xentGradOp": 1} {
		if kinds[kind] != want {
			t.Errorf("%d nodes of %s in the GPU's training graph, want %d (kinds: %v)", kinds[kind], kind, want, kinds)
		}
	}
	if h := r.vm.Report().HostOps; len(h) > 0 {
		t.Errorf("ops on the host: %v", h)
	}
}
