package nn

import "sync"

// partials is a pool of float64 scratch for the per-block partial sums of
// the reductions (column sums, the loss, the gradient norm), so that a
// training step does not allocate them anew at each op.
var partials sync.Pool

// getPartials returns a []float64 of n entries (contents unspecified) in a
// holder to give back with putPartials.
func getPartials(n int) *[]float64 {
	if p, ok := partials.Get().(*[]float64); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float64, n)
	return &s
}

func putPartials(p *[]float64) { partials.Put(p) }
