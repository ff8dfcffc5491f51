package cuda

import "math/bits"

// Philox4x32 returns the four 32-bit words of Philox-4x32-10 (Salmon, Moraes, Dror, Shaw,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011; the Random123 generator) at counter
// ctr under key: ten rounds of two 32×32→64-bit products mixed into the other words, the key
// bumped by the Weyl constants between rounds. It is the host twin of kernels/nn.cu's
// fg_philox, so that the CPU draws the masks the device draws.
func Philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	const (
		m0, m1 = 0xD2511F53, 0xCD9E8D57
		w0, w1 = 0x9E3779B9, 0xBB67AE85
	)
	for r := 0; r < 10; r++ {
		if r > 0 {
			key[0] += w0
			key[1] += w1
		}
		hi0, lo0 := bits.Mul32(m0, ctr[0])
		hi1, lo1 := bits.Mul32(m1, ctr[2])
		ctr = [4]uint32{hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0}
	}
	return ctr
}

// DropoutWord returns the 32 random bits of element i of a dropout mask: word i mod 4 of
// Philox4x32 at counter offset + i/4 (low half in word 0, high half in word 1, words 2 and 3
// zero) under key seed (low half, high half).
func DropoutWord(seed, offset uint64, i int) uint32 {
	c := offset + uint64(i)/4
	r := Philox4x32([4]uint32{uint32(c), uint32(c >> 32), 0, 0}, [2]uint32{uint32(seed), uint32(seed >> 32)})
	return r[i&3]
}

// DropoutKeep reports whether element i survives dropout with probability p: u ≥ p with
// u = DropoutWord(seed, offset, i)·2⁻³² ∈ [0, 1). The device's Dropout keeps the same
// elements.
func DropoutKeep(seed, offset uint64, i int, p float64) bool {
	return float64(DropoutWord(seed, offset, i))*(1.0/4294967296.0) >= p
}

// DropoutCounters returns how far a mask of n elements advances the Philox counter: the next
// mask drawn from Offset + DropoutCounters(n) shares no random bits with this one.
func DropoutCounters(n int) uint64 { return uint64(n+3) / 4 }
