package cuda

// The planes a BF16 forward keeps for its backward (AttentionBuffers.Planes).
//
// The BF16 backward reads Q, dO, K and V in bfloat16; without kept planes its pre-pass reads
// Q, K, V, dO and O in float32 and writes the four planes (at d = 64 and B·H·N = 524288 about
// 0.94 GB of traffic, 0.40 ms on the H100). The persistent forward (mmaCfg.fused) already
// rounds K and V to bfloat16 tiles in its workspace, and it reads every row of Q once; kept,
// those tiles and a Q plane written beside them leave the backward's pre-pass dO alone
// (0.34 GB). The values are the same bits the pre-pass would write (round to nearest even
// from the same float32 values), so the backward's results do not change.
//
// Layout of Planes for a problem kp (keptLayout), in bytes from its start:
//
//	K tiles  [B, Hkv, ceil(Nk/hopperBN), hopperBN, d] bfloat16, each tile in wgmma's 128-byte
//	         swizzle (the forward's bulk copies read them so; fg_load_kv_sw128 in the backward)
//	V tiles  the same
//	flags    the forward's tile flags (mmaCfg.flagBytes)
//	Q        [B, H, Nq, d] bfloat16, row-major
//
// which is the forward's workspace (mmaCfg.scratchBytes) followed by Q's plane.

// sharesPlanes reports whether forward c and backward kv, q can share Planes: a forward that
// converts K and V into tiles itself and writes Q's plane (the fused persistent kernels,
// variants 20 to 22 and 38: mmaCfg.keeps), and backward kernels that read them (readsPlanes).
func sharesPlanes(c mmaCfg, kv, q mmaBwdCfg) bool { return c.keeps() && readsPlanes(kv, q) }

// readsPlanes reports whether backward kv, q can read the planes a forward kept: the Hopper
// kernels, which take K and V as tiles by kv_tiles (the dK/dV kernel that also computes dQ
// reads the pre-pass's semaphores and is not one of them, nor are the 3xF16 kernels, X3, which
// read half planes of their own).
func readsPlanes(kv, q mmaBwdCfg) bool {
	return kv.Hopper && q.Hopper && kv.Pre && q.Pre && !kv.Fused && !kv.X3 && !q.X3
}

// keptLayout returns the byte offsets of the K tiles, V tiles and Q plane in Planes, and its
// size, for kp's problem (see above).
func keptLayout(kp *attnParams) (k, v, q, size int64) {
	tiles := int64(kp.b) * int64(kp.hkv) * int64(ceilDiv(int(kp.nk), hopperBN)*hopperBN) * int64(kp.d) * 2
	flags := mmaCfg{}.flagBytes(kp)
	q = 2*tiles + flags
	return 0, tiles, q, q + 2*int64(kp.b)*int64(kp.h)*int64(kp.nq)*int64(kp.d)
}

// keptPair returns the kernels of kp's problem that share Planes, the forward c and the
// backward kv, q (pickMMA's and pickMMABwd's defaults with a workspace, on a device of
// compute capability sm), or ok false when they do not share them.
func keptPair(kp *attnParams, dt dtype, sm int) (c mmaCfg, kv, q mmaBwdCfg, ok bool) {
	c, okF := pickMMA(kp, dt, 0, true, sm)
	kv, q, okB := pickMMABwd(kp, dt, -1, -1, true, sm)
	return c, kv, q, okF && okB && sharesPlanes(c, kv, q)
}

// keptPlanes locates, for the backward kernels, the planes a forward kept at base: the K and
// V tiles (the kernels find a head's tiles from B, Hkv and Nk: fg_kv_head) and Q's plane.
type keptPlanes struct {
	k, v, q devptr
}

// kept returns the planes at base for kp's problem.
func kept(kp *attnParams, base devptr) keptPlanes {
	k, v, q, _ := keptLayout(kp)
	return keptPlanes{k: base + devptr(k), v: base + devptr(v), q: base + devptr(q)}
}

// keptElems is the size of Planes in Float32 elements for kp's problem, 0 when its kernels
// keep none.
func keptElems(kp *attnParams, dt dtype) int {
	if _, _, _, ok := keptPair(kp, dt, deviceSM()); !ok {
		return 0
	}
	_, _, _, n := keptLayout(kp)
	return int((n + 3) / 4)
}

// PlanesSize returns the number of Float32 elements of Planes that AttentionForwardBuffers
// fills and AttentionBackwardBuffers reads for p's problem, or 0 when its kernels keep none
// (see Planes): then Planes is not used.
func (p AttentionBuffers) PlanesSize() int {
	kp := p.sizing()
	return keptElems(&kp, p.qType())
}
