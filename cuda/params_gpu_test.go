//go:build gpu

package cuda

import (
	"reflect"
	"testing"
)

// TestParamsLayout checks that the Go mirrors of the kernel parameter structs have the size
// and field offsets the C compiler gives the structs of kernels/params.h. The kernels read
// the bytes of the Go struct as the C struct, so any difference is silent garbage. Needs cgo
// and the CUDA headers, no GPU.
func TestParamsLayout(t *testing.T) {
	cs, ca, cf := cLayouts()
	gs, ga, gf := goLayouts()
	for _, c := range []struct {
		name   string
		c, g   fieldLayout
		fields int
	}{
		{"fg_softmax_params", cs, gs, reflect.TypeOf(softmaxParams{}).NumField()},
		{"fg_attn_params", ca, ga, reflect.TypeOf(attnParams{}).NumField()},
		{"fg_fill_params", cf, gf, reflect.TypeOf(fillParams{}).NumField()},
	} {
		if c.g.size != c.c.size {
			t.Errorf("%s: Go size %d, C size %d", c.name, c.g.size, c.c.size)
		}
		if len(c.g.offsets) != c.fields {
			t.Errorf("%s: the layout lists %d of the Go struct's %d fields", c.name, len(c.g.offsets), c.fields)
		}
		for i := range c.c.offsets {
			if c.g.offsets[i] != c.c.offsets[i] {
				t.Errorf("%s: field %d at Go offset %d, C offset %d", c.name, i, c.g.offsets[i], c.c.offsets[i])
			}
		}
	}
}
