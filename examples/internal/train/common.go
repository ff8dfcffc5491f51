package train

import (
	"fmt"
	"time"
)

// Common holds the flags of both programs: the loop's (-steps, -batch,
// -eval_every, -time, -quiet, -seed), the optimizer's (-lr, -warmup) and the
// model's shape (-layers, -heads, -width).
type Common struct {
	Steps, Batch, EvalEvery, Warmup int
	Layers, Heads, Width            int
	LR                              float64
	Seed                            int64
	Time                            time.Duration
	Quiet                           bool
}

// Register defines the flags on f with the defaults of def (def.Time and
// def.Quiet are ignored: no time limit and a progress bar by default).
func (c *Common) Register(f *Flags, def Common) {
	f.Int(&c.Steps, "steps", def.Steps, NonNegative, "training steps")
	f.Int(&c.Batch, "batch", def.Batch, AtLeast(1), "sequences per step")
	f.Int(&c.EvalEvery, "eval_every", def.EvalEvery, AtLeast(1), "evaluate on held-out data every this many steps (and after the last)")
	f.Int(&c.Warmup, "warmup", def.Warmup, NonNegative, "linear warmup steps")
	f.Int(&c.Layers, "layers", def.Layers, AtLeast(1), "transformer blocks")
	f.Int(&c.Heads, "heads", def.Heads, AtLeast(1), "attention heads")
	f.Int(&c.Width, "width", def.Width, AtLeast(1), "model width (a multiple of -heads)")
	f.Float(&c.LR, "lr", def.LR, Positive, "peak learning rate")
	f.Int64(&c.Seed, "seed", def.Seed, Any, "random seed (initialization, batches, dropout, sampling)")
	f.Duration(&c.Time, "time", 0, NonNegative, "stop training once it has run this long (0: no limit; a run cut short by time is not reproducible)")
	f.BoolVar(&c.Quiet, "quiet", false, "no progress bar (it is also off when stderr is not a terminal)")
	f.Check(func() error {
		if c.Width%c.Heads != 0 {
			return fmt.Errorf("-width %d must be a multiple of -heads %d", c.Width, c.Heads)
		}
		return nil
	})
}
