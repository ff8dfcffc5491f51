package cuda

import "unsafe"

// FillNormal fills the Float32 or Float64 buffer b with scale·z_i, where z_i is a standard
// normal value drawn from (seed, i) alone (kernels/debug.cu's fg_debug_fill: SplitMix64 bits
// of seed·0x632be59bd9b4e019 + i, Box-Muller in float64, rounded to b's type), without
// waiting. The same (seed, i) gives the same value on every run and device, so a benchmark
// can draw hundreds of megabytes of inputs on the device, and another program (attnbench's
// sdpa_bench.py) can draw the same ones.
func FillNormal(b *Buffer, seed uint64, scale float64) error {
	const op = "fill normal"
	DT, _, err := floatOf(op, "b", b)
	if err != nil {
		return err
	}
	return launchOn(op, []operand{{name: "b", b: b, dt: DT, n: b.n}}, func(s *state) error {
		if b.n == 0 {
			return nil
		}
		fp := &fillParams{x: b.ptr, n: int64(b.n), seed: seed, scale: scale}
		if DT == Float64 {
			fp.f64 = 1
		}
		return s.start("debug", "fg_debug_fill", [3]int{max(1, min(ceilDiv(b.n, 256), 8192)), 1, 1}, 256, 0, unsafe.Pointer(fp))
	})
}
