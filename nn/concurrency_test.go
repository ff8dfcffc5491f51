package nn

import (
	"math"
	"math/rand"
	"path/filepath"
	"sync"
	"testing"

	"gorgonia.org/tensor"
)

// TestTrainBesideEval runs a training runner, an evaluation runner, a
// generator and checkpoint saves of one model on four goroutines (run it
// with -race). Every evaluation must equal, bit for bit, the evaluation of
// the parameters after some whole number of steps, and so must every saved
// checkpoint: no run or save sees half an update.
func TestTrainBesideEval(t *testing.T) {
	steps := 30
	if testing.Short() {
		steps = 12
	}
	cfg := tinyConfig()
	newModel := func() *GPT {
		m, err := NewGPT(cfg, tensor.Float32, rand.New(rand.NewSource(7)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := newModel()
	train, err := m.NewRunner(2, 4, Train)
	if err != nil {
		t.Fatal(err)
	}
	eval, err := m.NewRunner(2, 4, Eval)
	if err != nil {
		t.Fatal(err)
	}
	infer, err := m.NewRunner(1, 5, Infer)
	if err != nil {
		t.Fatal(err)
	}
	opt, err := NewAdamW(train.Params(), 0.9, 0.95, 1e-8, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	evTok, evTgt := []int{3, 1, 4, 1, 5, 6, 2, 6}, []int{1, 4, 1, 5, 6, 2, 6, 5}

	// The parameters after each step, copied by the training goroutine (the
	// only writer, so its own reads race with nothing).
	copies := [][][]float64{snapshot(m.Params(), nil)}
	var (
		wg      sync.WaitGroup
		stop    = make(chan struct{})
		evals   []float64
		saved   []string
		errs    = make(chan error, 4)
		ckptDir = t.TempDir()
	)
	wg.Add(4)
	go func() { // training
		defer wg.Done()
		defer close(stop)
		data := rand.New(rand.NewSource(8))
		tok, tgt := make([]int, 8), make([]int, 8)
		for s := 0; s < steps; s++ {
			for i := range tok {
				tok[i], tgt[i] = data.Intn(cfg.Vocab), data.Intn(cfg.Vocab)
			}
			if _, _, err := train.TrainStep(opt, 0.05, 1, tok, tgt, nil); err != nil {
				errs <- err
				return
			}
			// On a device the step leaves the parameters there: bring them
			// to the host (nothing else writes them until the next step).
			if err := train.Sync(); err != nil {
				errs <- err
				return
			}
			copies = append(copies, snapshot(m.Params(), nil))
		}
	}()
	go func() { // evaluation
		defer wg.Done()
		for {
			l, err := eval.Run(evTok, evTgt, nil)
			if err != nil {
				errs <- err
				return
			}
			evals = append(evals, l)
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	go func() { // generation
		defer wg.Done()
		g := rand.New(rand.NewSource(9))
		for {
			if _, err := Generate(infer, [][]int{{1, 2}}, 3, 1, g); err != nil {
				errs <- err
				return
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	go func() { // checkpoints
		defer wg.Done()
		for i := 0; ; i++ {
			p := filepath.Join(ckptDir, "ckpt"+string(rune('a'+i%26)))
			if err := SaveCheckpoint(p, m.Params(), opt, i, nil); err != nil {
				errs <- err
				return
			}
			if len(saved) < 26 {
				saved = append(saved, p)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The loss of each state the parameters went through.
	ref := newModel()
	refEval, err := ref.NewRunner(2, 4, Eval)
	if err != nil {
		t.Fatal(err)
	}
	valid := map[uint64]int{}
	for s, c := range copies {
		for i, p := range ref.Params() {
			fromF64(p.Value, c[i])
		}
		l, err := refEval.Run(evTok, evTgt, nil)
		if err != nil {
			t.Fatal(err)
		}
		valid[math.Float64bits(l)] = s
	}
	t.Logf("%d steps, %d evaluations, %d distinct losses", steps, len(evals), len(valid))
	if len(valid) < steps/2 {
		t.Fatalf("only %d distinct losses over %d steps: the test cannot tell states apart", len(valid), steps)
	}
	for i, l := range evals {
		if _, ok := valid[math.Float64bits(l)]; !ok {
			t.Fatalf("evaluation %d gave loss %.9g, the loss of no state the parameters went through", i, l)
		}
	}
	for _, p := range saved {
		ck, err := ReadCheckpoint(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := ck.Restore(ref.Params(), nil); err != nil {
			t.Fatal(err)
		}
		l, err := refEval.Run(evTok, evTgt, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := valid[math.Float64bits(l)]; !ok {
			t.Fatalf("checkpoint %s holds parameters of no state the model went through (loss %.9g)", p, l)
		}
	}
}
