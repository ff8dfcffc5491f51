package cuda

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestHeadsDevice checks the split of rows into attention heads and the merge back against
// loops over nn's headsOp definition: both the 16-byte kernel and the one-element kernel (an
// odd D, C or Off, or buffers 4 bytes past a 16-byte boundary), heads covering every column
// or a part of them (the merge's zeros), and a GPT's shapes. The moves are exact.
func TestHeadsDevice(t *testing.T) {
	needDevice(t)
	rng := rand.New(rand.NewSource(21))
	for _, dt := range dtypes {
		for _, c := range []struct{ b, n, h, d, c, off, shift int }{
			{1, 1, 1, 4, 4, 0, 0},
			{2, 3, 2, 4, 8, 0, 0},
			{2, 5, 3, 8, 48, 16, 0}, // heads in the middle of the row
			{2, 5, 3, 8, 48, 24, 0}, // heads ending at the row's last column
			{1, 17, 2, 5, 13, 3, 0}, // one element at a time
			{2, 4, 2, 4, 24, 8, 1},  // buffers off 16-byte alignment
			{3, 7, 4, 2, 8, 0, 0},   // d = 2: 16 bytes are a whole row of float64 only
			{16, 256, 8, 32, 768, 256, 0},
		} {
			for _, split := range []bool{true, false} {
				name := map[bool]string{true: "split", false: "merge"}[split]
				t.Run(fmt.Sprintf("%v/%s/B%d-N%d-H%d-D%d-C%d-Off%d-shift%d", dt, name, c.b, c.n, c.h, c.d, c.c, c.off, c.shift), func(t *testing.T) {
					rows, heads := c.b*c.n*c.c, c.b*c.h*c.n*c.d
					xn, yn := rows, heads
					if !split {
						xn, yn = heads, rows
					}
					x := rounded(randn(rng, xn, 1), dt)
					// A shift of s elements places X and Y s elements into larger buffers.
					X, Y := devBuf(t, dt, append(make([]float64, c.shift), x...)), devOut(t, dt, yn+c.shift)
					var err error
					if X, err = X.View(c.shift, xn); err != nil {
						t.Fatal(err)
					}
					if Y, err = Y.View(c.shift, yn); err != nil {
						t.Fatal(err)
					}
					want := make([]float64, yn) // the merge's other columns stay 0
					for b := 0; b < c.b; b++ {
						for h := 0; h < c.h; h++ {
							for l := 0; l < c.n; l++ {
								for j := 0; j < c.d; j++ {
									r := (b*c.n+l)*c.c + c.off + h*c.d + j
									hd := ((b*c.h+h)*c.n+l)*c.d + j
									if split {
										want[hd] = x[r]
									} else {
										want[r] = x[hd]
									}
								}
							}
						}
					}
					if err := Heads(HeadsParams{Split: split, B: c.b, N: c.n, H: c.h, D: c.d, C: c.c, Off: c.off, X: X, Y: Y}); err != nil {
						t.Fatal(err)
					}
					compare(t, "y", host(t, Y), want, 0)
				})
			}
		}
	}
	t.Run("errors", func(t *testing.T) {
		x, y := devOut(t, Float32, 64), devOut(t, Float32, 64)
		for _, p := range []HeadsParams{
			{Split: true, B: 1, N: 2, H: 2, D: 4, C: 7, X: x, Y: y},          // H·D > C
			{Split: true, B: 1, N: 2, H: 2, D: 4, C: 8, Off: -1, X: x, Y: y}, // Off < 0
			{Split: true, B: 1, N: 2, H: 2, D: 4, C: 12, Off: 5, X: x, Y: y}, // Off + H·D > C
			{Split: true, B: 1, N: 2, H: 2, D: 4, C: 16, X: x, Y: y},         // X too short for [2, 16]… and Y too long
			{Split: true, B: 0, N: 2, H: 2, D: 4, C: 8, X: x, Y: y},
		} {
			if err := Heads(p); err == nil {
				t.Errorf("%+v: no error", p)
			}
		}
	})
}
