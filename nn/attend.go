package nn

import (
	"gorgonia.org/gorgonia"

	"github.com/flashgorgon/flashgorgon/ops/attention"
)

// attend is the fused attention of ops/attention: q [B,H,N,d], k and v
// [B,Hkv,N,d] → o [B,H,N,d].
func attend(q, k, v *gorgonia.Node, causal bool, scale float64) (*gorgonia.Node, error) {
	return attention.Attention(q, k, v, attention.Options{Causal: causal, Scale: scale})
}
