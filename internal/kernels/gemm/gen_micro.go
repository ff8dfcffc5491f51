//go:build ignore

// gen_micro writes micro512_amd64.s and micro512_amd64.go: the generated
// AVX-512 micro-kernels, one per (element type, rows mr, vectors per row
// nv), each a tile of mr×(nv·lanes) with one FMA chain per accumulator
// along a chunk (the package comment's scheme, as the AVX2 kernels run it):
//
//	go run gen_micro.go
//
// A kernel of mr rows serves as a variant's main tile or as the edge
// kernel of a variant with more rows (the last rows of C, computed exactly
// instead of recomputing a full strip).
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"strings"
)

// The kernels generated: element type, vectors per row, rows 1…maxRows,
// and whether each depth step prefetches the next cache line of A's row 0
// into L2 (prefetchA).
//
// The 8×48 family (three vectors a row) is the tile of nn's weight
// gradients whose width the 6×64 tile does not divide (kernel.exact: the
// 96-wide head's xᵀ·g, 64 + 32 columns on 6×64 and 6×32 tiles, where the
// 6×32 tile has 12 accumulators and the 6×64 one carried the packing
// twin's copy for one tile only). It reads a transposed A in place, eight
// values of a depth step from a line of their own (x's rows 1 KiB apart);
// the prefetch brings in the line beside it, which the strips two and
// three after this one read, so that they find it in L2 rather than in L3
// (the development machine's Xeon: 1.04× on the head gradient's depth
// parts, PREFETCHT1 as PREFETCHT0; prefetching the next depth block's
// lines instead gained nothing).
var families = []struct {
	typ       byte // 'S' float32, 'D' float64
	nv        int
	maxRows   int
	prefetchA bool
}{
	{'S', 1, 12, false},
	{'S', 2, 12, false},
	{'S', 3, 8, true},
	{'S', 4, 6, false},
	{'D', 1, 12, false},
	{'D', 2, 12, false},
	{'D', 3, 8, true},
	{'D', 4, 6, false},
}

// The packing twins: for each (element type, vectors per row, rows), a
// kernel that also copies the mr values of A it reads each depth step to
// pa (packed: pa[p·mr + r], rs must be 1): the first column strip of a
// transposed A read in place packs it for the strips after it.
var packing = []struct {
	typ    byte
	nv, mr int
}{
	{'S', 4, 6},
	{'D', 4, 6},
}

func name(typ byte, mr, nv int) string { return fmt.Sprintf("micro%c512r%dv%d", typ, mr, nv) }

func packName(typ byte, mr, nv int) string { return name(typ, mr, nv) + "pack" }

type gen struct {
	b bytes.Buffer
	// prefetchA: the plain kernels being written prefetch A's next line
	// (families).
	prefetchA bool
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

// rowAddr returns how each row's broadcast addresses A: from a base
// register (SI, or R10 = SI + off·rs) plus an index register (R8 = rs,
// R9 = 3·rs, R14 = 5·rs) times a scale. It prefers one base (each base is
// one add per depth step) and then as few index registers as possible.
type addressing struct {
	off   int      // R10's row offset, 0 when R10 is not used
	r14   bool     // whether R14 = 5·rs is used
	addrs []string // per row: the operand, with %s for the extra displacement
}

func rowAddressing(mr int) addressing {
	type idx struct {
		reg  string
		mult int
	}
	try := func(off int, useR14 bool) (addressing, bool) {
		idxs := []idx{{"R8", 1}, {"R9", 3}}
		if useR14 {
			idxs = append(idxs, idx{"R14", 5})
		}
		bases := []struct {
			reg string
			off int
		}{{"SI", 0}}
		if off > 0 {
			bases = append(bases, struct {
				reg string
				off int
			}{"R10", off})
		}
		a := addressing{off: off, r14: useR14}
		for r := 0; r < mr; r++ {
			found := ""
			for _, b := range bases {
				if r == b.off {
					found = "(" + b.reg + ")"
					break
				}
				for _, x := range idxs {
					for _, s := range []int{1, 2, 4, 8} {
						if found == "" && b.off+x.mult*s == r {
							found = fmt.Sprintf("(%s)(%s*%d)", b.reg, x.reg, s)
						}
					}
				}
				if found != "" {
					break
				}
			}
			if found == "" {
				return a, false
			}
			a.addrs = append(a.addrs, found)
		}
		return a, true
	}
	for _, r14 := range []bool{false, true} {
		if a, ok := try(0, r14); ok {
			return a
		}
	}
	for _, r14 := range []bool{false, true} {
		for off := 1; off < mr; off++ {
			if a, ok := try(off, r14); ok {
				return a
			}
		}
	}
	panic(fmt.Sprintf("no addressing for %d rows", mr))
}

// jumpIfOne jumps to label when the argument name (at frame offset off, of
// the kernel's element type) is exactly 1, loading it into reg (and, in
// float64, the constant 1 into tmp).
func (g *gen) jumpIfOne(typ byte, name string, off int, reg, tmp, label string) {
	if typ == 'S' {
		g.p("\tMOVL %s+%d(FP), %s", name, off, reg)
		g.p("\tCMPL %s, $0x3f800000", reg)
	} else {
		g.p("\tMOVQ %s+%d(FP), %s", name, off, reg)
		g.p("\tMOVQ $0x3ff0000000000000, %s", tmp)
		g.p("\tCMPQ %s, %s", reg, tmp)
	}
	g.p("\tJEQ  %s", label)
}

// The kernels' epilogues: plainKernel writes C = alpha·t + beta·C;
// stairKernel is plainKernel whose row i sums i more depth steps than k
// (stairSteps) before it;
// packKernel is that with the packing twin's copy of A; expKernel writes
// the online softmax's exponentials of alpha·t instead (expEpilogue), and
// expMaskedKernel those of the entries its lane masks keep, 0 elsewhere.
const (
	plainKernel = iota
	packKernel
	expKernel
	expMaskedKernel
	stairKernel
)

func (g *gen) kernel(typ byte, mr, nv int, mode int) {
	pack := mode == packKernel
	nacc := mr * nv
	if nacc+nv+1 > 32 {
		panic("too many registers")
	}
	acc := func(i int) string { return fmt.Sprintf("Z%d", i) }
	breg := func(v int) string { return fmt.Sprintf("Z%d", nacc+v) }
	var temps []string // broadcast and scratch registers
	for r := nacc + nv; r < 32; r++ {
		temps = append(temps, fmt.Sprintf("Z%d", r))
	}
	size, sh, elem := 4, 2, "float32"
	fma, mul, add, mov, bcast := "VFMADD231PS", "VMULPS", "VADDPS", "VMOVUPS", "VBROADCASTSS"
	if typ == 'D' {
		size, sh, elem = 8, 3, "float64"
		fma, mul, add, mov, bcast = "VFMADD231PD", "VMULPD", "VADDPD", "VMOVUPD", "VBROADCASTSD"
	}
	alphaOff, betaOff, loadOff, argSize := 72, 72+size, 72+2*size, 72+2*size+1
	paOff := (argSize + 7) &^ 7
	total := nacc * 64
	frame := 4*total + 64
	ad := rowAddressing(mr)
	nm, extra := name(typ, mr, nv), ""
	exp := mode == expKernel || mode == expMaskedKernel
	if exp {
		if typ != 'S' || nv != 4 {
			panic("exp kernels are float32 of 4 vectors a row")
		}
		nm, extra, argSize = expName(mr), "", expArgSize
		if mode == expMaskedKernel {
			nm, argSize = expMaskedName(mr), expMaskedArgSize
		}
	}
	if mode == stairKernel {
		nm = stairName(typ, mr, nv)
	}
	if pack {
		// pa lives in R10, the second row base, which these rows do not use;
		// the copy goes through the last temporary, masked to mr lanes (K1).
		if ad.off > 0 || mr*size > 64 {
			panic("no packing twin for this tile")
		}
		nm, extra, argSize = packName(typ, mr, nv), ", pa *"+elem, paOff+8
	}

	switch mode {
	case expKernel:
		g.p("// func %s%s", nm, expSignature)
	case expMaskedKernel:
		g.p("// func %s%s", nm, expMaskedSignature)
	default:
		g.p("// func %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool%s)", nm, elem, elem, elem, elem, extra)
	}
	g.p("TEXT ·%s(SB), $%d-%d", nm, frame, argSize)
	g.p("\tMOVQ k+0(FP), CX")
	g.p("\tMOVQ kb+8(FP), R11")
	g.p("\tMOVQ a+16(FP), SI")
	g.p("\tMOVQ rs+24(FP), R8")
	g.p("\tSHLQ $%d, R8", sh)
	g.p("\tMOVQ ps+32(FP), R12")
	g.p("\tSHLQ $%d, R12", sh)
	g.p("\tMOVQ b+40(FP), DI")
	g.p("\tMOVQ bs+48(FP), R13")
	g.p("\tSHLQ $%d, R13", sh)
	g.p("\tLEAQ (R8)(R8*2), R9")
	if ad.r14 {
		g.p("\tLEAQ (R8)(R8*4), R14")
	}
	if ad.off > 0 {
		g.p("\tIMUL3Q $%d, R8, AX", ad.off)
		g.p("\tLEAQ (SI)(AX*1), R10")
	}
	cp := "Y" + temps[len(temps)-1][1:] // the copy's register: mr·size ≤ 32 bytes
	if mr*size > 32 {
		cp = temps[len(temps)-1]
	}
	if pack {
		g.p("\tMOVQ pa+%d(FP), R10", paOff)
		g.p("\tMOVL $%d, AX", 1<<mr-1)
		g.p("\tKMOVW AX, K1")
	}
	g.p("\tLEAQ 63(SP), DX // the four totals, 64-byte aligned")
	g.p("\tANDQ $-64, DX")
	g.p("\t// Fetch C's tile into L1 now: the epilogue reads and writes it.")
	g.p("\tMOVQ c+56(FP), AX")
	g.p("\tMOVQ ldc+64(FP), BX")
	g.p("\tSHLQ $%d, BX", sh)
	lines := (nv*64 + 63) / 64
	for r := 0; r < mr; r++ {
		for l := 0; l < lines; l++ {
			g.p("\tPREFETCHT0 %d(AX)", l*64)
		}
		if r < mr-1 {
			g.p("\tADDQ BX, AX")
		}
	}
	g.p("\tXORQ BX, BX // chunk index")

	// stepThen is one depth step; after acc(i)'s product of the step, then
	// (when not nil) writes the instructions for acc(i) (a closing step's
	// chunk total: see closing).
	stepThen := func(op string, then func(i int)) {
		for v := 0; v < nv; v++ {
			g.p("\t%s %d(DI), %s", mov, v*64, breg(v))
		}
		if pack {
			g.p("\t%s.Z (SI), K1, %s", mov, cp)
			g.p("\t%s %s, K1, (R10)", mov, cp)
			g.p("\tADDQ $%d, R10", mr*size)
			// The next line of this row of A, which the strips after this
			// one read: a row a depth step is too many streams for the
			// hardware prefetchers to follow.
			g.p("\tPREFETCHT0 64(SI)")
		}
		if g.prefetchA && mode == plainKernel {
			g.p("\tPREFETCHT1 64(SI)")
		}
		for r := 0; r < mr; r++ {
			t := temps[r%len(temps)]
			g.p("\t%s %s, %s", bcast, ad.addrs[r], t)
			for v := 0; v < nv; v++ {
				g.p("\t%s %s, %s, %s", op, breg(v), t, acc(r*nv+v))
				if then != nil {
					then(r*nv + v)
				}
			}
		}
		g.p("\tADDQ R12, SI")
		if ad.off > 0 {
			g.p("\tADDQ R12, R10")
		}
		g.p("\tADDQ R13, DI")
	}
	step := func(op string) { stepThen(op, nil) }

	// The exp kernels close each chunk in its last step (closing): each
	// accumulator goes to its total (or joins it: flush) right after its
	// last product, among the step's other products, instead of the 4·mr
	// stores (and adds) in a burst after the step (stepped, flush), which
	// the FMA ports waited on: the causal N = 1024 forward 1–2% faster on
	// one core of the development Xeon. The sums are those of the burst:
	// the same adds in the same order. The other kernels keep the burst
	// (nn's products read 0–2% slower with closing steps).
	interleave := exp
	// A chunk c's total: AX = its address (total c mod 4); storeTotal
	// sets it to acc(i) (chunks 0…3), joinTotal adds acc(i) into it
	// (flush: chunks 4…).
	totalAddr := func() {
		g.p("\tMOVQ  BX, AX // chunk c goes into total c mod 4")
		g.p("\tANDQ  $3, AX")
		g.p("\tIMULQ $%d, AX", total)
		g.p("\tADDQ  DX, AX")
	}
	storeTotal := func(i int) { g.p("\t%s %s, %d(AX)", mov, acc(i), i*64) }
	joinTotal := func(i int) {
		g.p("\t%s %d(AX), %s, %s", add, i*64, acc(i), acc(i))
		g.p("\t%s %s, %d(AX)", mov, acc(i), i*64)
	}
	// closing writes a chunk's last step (op: its first, VMULPS, where
	// the chunk is one step long) with the chunk's total interleaved; the
	// last chunk keeps its sums in registers (last).
	closing := func(op, sfx string) {
		g.p("close%s:", sfx)
		g.p("\tTESTQ CX, CX")
		g.p("\tJZ    lastStep%s", sfx)
		totalAddr()
		g.p("\tINCQ  BX")
		g.p("\tCMPQ  BX, $4")
		g.p("\tJGT   flushStep%s", sfx)
		stepThen(op, storeTotal)
		g.p("\tJMP  chunk")
		g.p("")
		g.p("flushStep%s:", sfx)
		stepThen(op, joinTotal)
		g.p("\tJMP  chunk")
		g.p("")
		g.p("lastStep%s:", sfx)
		step(op)
		g.p("\tJMP  last")
		g.p("")
	}
	// done is where the step loop goes when a chunk's steps are done.
	done := "stepped"
	if interleave {
		done = "close"
	}

	g.p("")
	g.p("chunk:")
	g.p("\tMOVQ    R11, AX")
	g.p("\tCMPQ    CX, AX")
	g.p("\tCMOVQLT CX, AX // steps in this chunk: min(kb, depth left)")
	g.p("\tSUBQ    AX, CX")
	if interleave {
		g.p("\t// The first step sets the accumulators, the others add; the last")
		g.p("\t// closes the chunk (closing). AX counts the steps before it.")
		g.p("\tDECQ AX")
		g.p("\tJZ   closeMul")
	} else {
		g.p("\t// The first step sets the accumulators, the others add.")
	}
	step(mul)
	g.p("\tDECQ AX")
	g.p("\tJZ   %s", done)
	g.p("\tCMPQ AX, $3")
	g.p("\tJLT  single")
	step(fma)
	step(fma)
	step(fma)
	g.p("\tSUBQ $3, AX")
	g.p("\tJZ   %s", done)
	g.p("\tCMPQ AX, $4")
	g.p("\tJLT  single")
	g.p("")
	g.p("quad: // four steps a turn: chunks are 4, 8, 16 or 32 steps")
	step(fma)
	step(fma)
	step(fma)
	step(fma)
	g.p("\tSUBQ $4, AX")
	g.p("\tJZ   %s", done)
	g.p("\tCMPQ AX, $4")
	g.p("\tJGE  quad")
	g.p("")
	g.p("single:")
	step(fma)
	g.p("\tDECQ AX")
	g.p("\tJNZ  single")
	g.p("")
	if interleave {
		closing(fma, "")
		closing(mul, "Mul")
	} else {
		g.p("stepped:")
		g.p("\tTESTQ CX, CX")
		g.p("\tJZ    last")
		totalAddr()
		g.p("\tCMPQ  BX, $4")
		g.p("\tJGE   flush")
		for i := 0; i < nacc; i++ {
			storeTotal(i)
		}
		g.p("\tINCQ BX")
		g.p("\tJMP  chunk")
		g.p("")
		g.p("flush:")
		for i := 0; i < nacc; i++ {
			joinTotal(i)
		}
		g.p("\tINCQ BX")
		g.p("\tJMP  chunk")
		g.p("")
	}
	addTotal := func() {
		for i := 0; i < nacc; i++ {
			g.p("\t%s %d(AX), %s, %s", add, i*64, acc(i), acc(i))
		}
	}
	scratch := append([]string{}, temps...)
	for v := 0; v < nv; v++ {
		scratch = append(scratch, breg(v))
	}
	g.p("last:")
	g.p("\t// The last chunk c = BX joins its total t = c mod 4 in registers;")
	g.p("\t// totals 0…min(c, 3) are in use. The result is (T_t + T_t^1) +")
	g.p("\t// (T_q + T_q+1) with {q, q+1} the other pair.")
	g.p("\tMOVQ  BX, R11")
	g.p("\tANDQ  $3, R11 // t")
	g.p("\tCMPQ  BX, $4")
	g.p("\tJLT   partner")
	g.p("\tMOVQ  R11, AX")
	g.p("\tIMULQ $%d, AX", total)
	g.p("\tADDQ  DX, AX")
	addTotal()
	g.p("")
	g.p("partner:")
	g.p("\tMOVQ  R11, AX")
	g.p("\tXORQ  $1, AX")
	g.p("\tCMPQ  AX, BX")
	g.p("\tJGT   pair // t^1 > c: not in use")
	g.p("\tIMULQ $%d, AX", total)
	g.p("\tADDQ  DX, AX")
	addTotal()
	g.p("")
	g.p("pair:")
	g.p("\tMOVQ  R11, AX // the other pair starts at q = (t^2) & 2")
	g.p("\tXORQ  $2, AX")
	g.p("\tANDQ  $2, AX")
	g.p("\tCMPQ  AX, BX")
	g.p("\tJGT   combined")
	g.p("\tLEAQ  1(AX), R12")
	g.p("\tIMULQ $%d, AX", total)
	g.p("\tADDQ  DX, AX")
	g.p("\tCMPQ  R12, BX")
	g.p("\tJGT   one")
	g.p("\tIMULQ $%d, R12", total)
	g.p("\tADDQ  DX, R12")
	for i := 0; i < nacc; i++ {
		t := scratch[i%len(scratch)]
		g.p("\t%s %d(AX), %s", mov, i*64, t)
		g.p("\t%s %d(R12), %s, %s", add, i*64, t, t)
		g.p("\t%s %s, %s, %s", add, t, acc(i), acc(i))
	}
	g.p("\tJMP   combined")
	g.p("")
	g.p("one:")
	addTotal()
	g.p("")
	g.p("combined:")
	if mode == stairKernel {
		g.stairSteps(mr, nv, ad, fma)
	}
	if exp {
		g.expEpilogue(mr, mode == expMaskedKernel)
		return
	}
	g.p("\t// C = alpha·total (+ beta·C); alpha = 1 and beta = 1 skip the multiply.")
	ab := temps[0]
	g.jumpIfOne(typ, "alpha", alphaOff, "AX", "R8", "scaled")
	g.p("\t%s alpha+%d(FP), %s", bcast, alphaOff, ab)
	for i := 0; i < nacc; i++ {
		g.p("\t%s %s, %s, %s", mul, ab, acc(i), acc(i))
	}
	g.p("")
	g.p("scaled:")
	g.p("\tMOVQ    c+56(FP), AX")
	g.p("\tMOVQ    ldc+64(FP), BX")
	g.p("\tSHLQ    $%d, BX", sh)
	g.p("\tMOVBQZX loadC+%d(FP), R8", loadOff)
	g.p("\tTESTQ   R8, R8")
	g.p("\tJZ      store")
	g.jumpIfOne(typ, "beta", betaOff, "R8", "R9", "addc")
	g.p("\t%s beta+%d(FP), %s", bcast, betaOff, ab)
	g.p("\tMOVQ AX, R8")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.p("\t%s %d(R8), %s, %s", fma, v*64, ab, acc(r*nv+v))
		}
		if r < mr-1 {
			g.p("\tADDQ BX, R8")
		}
	}
	g.p("\tJMP store")
	g.p("")
	g.p("addc:")
	g.p("\tMOVQ AX, R8")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.p("\t%s %d(R8), %s, %s", add, v*64, acc(r*nv+v), acc(r*nv+v))
		}
		if r < mr-1 {
			g.p("\tADDQ BX, R8")
		}
	}
	g.p("")
	g.p("store:")
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.p("\t%s %s, %d(AX)", mov, acc(r*nv+v), v*64)
		}
		if r < mr-1 {
			g.p("\tADDQ BX, AX")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
	_ = size
}

// stairName is the name of the stair kernel of mr rows and nv vectors per
// row.
func stairName(typ byte, mr, nv int) string { return name(typ, mr, nv) + "stair" }

// The stair kernels: element type, rows, vectors per row (the chained
// kernels' main tiles on AVX-512: variant 6).
var stairs = []struct {
	typ    byte
	mr, nv int
}{
	{'S', 6, 4},
	{'D', 6, 4},
}

// stairSteps writes the stair kernels' extra steps: after the k steps of
// every row (one chunk: kb ≥ k), SI and DI point at depth k of A and B,
// and step t = 0…mr−2 adds a[i, k+t]·b[k+t, ·] to the rows i > t only, so
// that row i sums k+i steps in its one chain: the causal staircase of an
// attention tile's diagonal, where row i sees one key more than row i−1.
// A row never reads A or B at a depth it does not sum. R12 (ps) is set
// again: the chunk totals' code may have used it.
func (g *gen) stairSteps(mr, nv int, ad addressing, fma string) {
	mov, bcast, sh := "VMOVUPS", "VBROADCASTSS", 2
	if fma == "VFMADD231PD" {
		mov, bcast, sh = "VMOVUPD", "VBROADCASTSD", 3
	}
	nacc := mr * nv
	g.p("\t// The staircase: step t adds to rows t+1… only.")
	g.p("\tMOVQ ps+32(FP), R12")
	g.p("\tSHLQ $%d, R12", sh)
	for t := 0; t < mr-1; t++ {
		for v := 0; v < nv; v++ {
			g.p("\t%s %d(DI), Z%d", mov, v*64, nacc+v)
		}
		for r := t + 1; r < mr; r++ {
			tmp := fmt.Sprintf("Z%d", nacc+nv+(r%(32-nacc-nv)))
			g.p("\t%s %s, %s", bcast, ad.addrs[r], tmp)
			for v := 0; v < nv; v++ {
				g.p("\t%s Z%d, %s, Z%d", fma, nacc+v, tmp, r*nv+v)
			}
		}
		if t < mr-2 {
			g.p("\tADDQ R12, SI")
			if ad.off > 0 {
				g.p("\tADDQ R12, R10")
			}
			g.p("\tADDQ R13, DI")
		}
	}
}

// The exp kernels (expEpilogue): float32, 4 vectors (64 columns) a row,
// 1…expRows rows.
const expRows = 6

func expName(mr int) string { return fmt.Sprintf("expS512r%dv4", mr) }

func expMaskedName(mr int) string { return fmt.Sprintf("expMS512r%dv4", mr) }

// expSignature is the exp kernels' Go signature (after the name) and
// expArgSize the size of their arguments and result: the micro-kernel's
// up to alpha, then m, lv, stash, tab, the result at 112.
const (
	expSignature = "(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32, m *float32, lv, stash *float64, tab *expTable) (grew bool)"
	expArgSize   = 113
	// The masked kernels take the lane masks after tab: mask[4r + v] keeps
	// lane l of vector v of row r where bit l is set.
	expMaskedSignature = "(k, kb int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, alpha float32, m *float32, lv, stash *float64, tab *expTable, mask *uint16) (grew bool)"
	expMaskedArgSize   = 121
	// expArgs passes expSignature's arguments on (the masked kernels' mask
	// follows).
	expArgs = "k, kb, a, rs, ps, b, bs, c, ldc, alpha, m, lv, stash, tab"
)

// The offsets of expTable's fields (scoreexp_amd64.go).
const (
	etS     = 64 // S = 1.5·2¹⁹
	etC3    = 68 // q(r) = c1 + c2·r + c3·r²
	etC2    = 72
	etC1    = 76
	etLeast = 80 // −125: lanes below give 0
	etTau   = 84 // τ: how far a row's maximum may pass m before m moves
	etNinf  = 88 // −Inf: the masked kernels' dropped lanes before the row's maximum
)

// expEpilogue writes the exp kernels' end (see exp512 in
// scoreexp_amd64.go for what they compute): the tile t of mr rows × 64
// columns is in Z0…Z(4mr−1), row r in Z(4r)…Z(4r+3); Z24…Z31 and K1…K3 are
// free. Per row, the largest alpha·t of the row is compared with m[r] + τ;
// when no row's passes it (the common case once a row has seen a few
// keys) the exponentials run at once, else each row whose maximum passed
// takes it as m[r] (its lv moved to stash, lv zeroed, the result true).
// Then, per entry, s = fl(alpha·t) (Gemm's C), a = fl(s − m[r]) and 2^a by
// vec's EXP2TAB512 (a 16-entry table of 2^(j/16) in Z24 and a degree-2
// polynomial; its constants broadcast from the table, so that the 24
// accumulators keep their registers; two entries at a time, interleaved:
// expPair), 0 where a < −125; the row's 64
// results summed four vectors at a time in float32, then as float64 into
// lv[8r…8r+7].
//
// The masked kernels (masked) first set the lanes their masks drop to −Inf
// (a score of no key: it never raises the row's maximum, and a NaN or
// ±Inf of a masked key's product goes no further), and their
// exponentials keep only the masked-in lanes (the flush's compare under
// the mask: 0 elsewhere, also where −Inf − m is NaN).
func (g *gen) expEpilogue(mr int, masked bool) {
	acc := func(r, v int) string { return fmt.Sprintf("Z%d", 4*r+v) }
	grew := 112
	if masked {
		grew = 120
	}
	g.p("\tMOVQ         tab+104(FP), R8")
	g.p("\tMOVQ         m+80(FP), R9")
	g.p("\tMOVB         $0, grew+%d(FP)", grew)
	if masked {
		g.p("\t// The masked lanes: −Inf.")
		g.p("\tMOVQ         mask+112(FP), R12")
		g.p("\tVBROADCASTSS %d(R8), Z31 // −Inf", etNinf)
		for r := 0; r < mr; r++ {
			for v := 0; v < 4; v++ {
				g.p("\tKMOVW        %d(R12), K1", 2*(4*r+v))
				g.p("\tVBLENDMPS    %s, Z31, K1, %s", acc(r, v), acc(r, v))
			}
		}
	}
	g.p("\t// K2 = the lanes of any row whose alpha·t passes m + τ.")
	g.p("\tKXORW        K2, K2, K2")
	rowMax := func(r int) {
		g.p("\tVMAXPS %s, %s, Z30", acc(r, 1), acc(r, 0))
		g.p("\tVMAXPS %s, %s, Z29", acc(r, 3), acc(r, 2))
		g.p("\tVMAXPS Z29, Z30, Z30")
		g.p("\tVMULPS.BCST alpha+72(FP), Z30, Z30 // alpha·max t = max alpha·t (alpha > 0)")
	}
	for r := 0; r < mr; r++ {
		rowMax(r)
		g.p("\tVBROADCASTSS     %d(R9), Z29", 4*r)
		g.p("\tVADDPS.BCST      %d(R8), Z29, Z29 // m + τ", etTau)
		g.p("\tVCMPPS           $0x1e, Z29, Z30, K1 // alpha·t > m + τ (ordered)")
		g.p("\tKORW             K1, K2, K2")
	}
	g.p("\tKORTESTW K2, K2")
	g.p("\tJZ       exps")
	g.p("\t// Some row's maximum passed m + τ: the rows whose did take it.")
	g.p("\tMOVQ lv+88(FP), R10")
	g.p("\tMOVQ stash+96(FP), R11")
	for r := 0; r < mr; r++ {
		rowMax(r)
		g.p("\tVSHUFF32X4   $0x4e, Z30, Z30, Z29")
		g.p("\tVMAXPS       Z29, Z30, Z30")
		g.p("\tVSHUFF32X4   $0xb1, Z30, Z30, Z29")
		g.p("\tVMAXPS       Z29, Z30, Z30")
		g.p("\tVPERMILPS    $0x4e, Z30, Z29")
		g.p("\tVMAXPS       Z29, Z30, Z30")
		g.p("\tVPERMILPS    $0xb1, Z30, Z29")
		g.p("\tVMAXPS       Z29, Z30, Z30 // every lane: the row's max")
		g.p("\tVBROADCASTSS %d(R9), Z29", 4*r)
		g.p("\tVADDPS.BCST  %d(R8), Z29, Z29", etTau)
		g.p("\tVCMPPS       $0x1e, Z29, Z30, K1")
		g.p("\tKORTESTW     K1, K1")
		g.p("\tJZ           kept%d", r)
		g.p("\tVMOVSS       X30, %d(R9) // m[r] = the row's max", 4*r)
		g.p("\tVMOVUPD      %d(R10), Z29", 64*r)
		g.p("\tVMOVUPD      Z29, %d(R11) // stash[r] = lv[r]", 64*r)
		g.p("\tVPXORQ       Z29, Z29, Z29")
		g.p("\tVMOVUPD      Z29, %d(R10) // lv[r] = 0", 64*r)
		g.p("\tMOVB         $1, grew+%d(FP)", grew)
		g.p("kept%d:", r)
	}
	g.p("")
	g.p("exps:")
	g.p("\tMOVQ    c+56(FP), AX")
	g.p("\tMOVQ    ldc+64(FP), BX")
	g.p("\tSHLQ    $2, BX")
	g.p("\tMOVQ    lv+88(FP), R10")
	g.p("\tVMOVUPS (R8), Z24 // 2^(j/16), j < 16")
	if masked {
		g.p("\tMOVQ    mask+112(FP), R12")
	}
	for r := 0; r < mr; r++ {
		g.p("\tVBROADCASTSS %d(R9), Z25 // m[r]", 4*r)
		for v := 0; v < 4; v += 2 {
			if masked {
				g.p("\tKMOVW        %d(R12), K5", 2*(4*r+v))
				g.p("\tKMOVW        %d(R12), K6", 2*(4*r+v+1))
			}
			g.expPair(acc(r, v), acc(r, v+1), masked)
		}
		for v := 0; v < 4; v++ {
			g.p("\tVMOVUPS          %s, %d(AX)", acc(r, v), 64*v)
		}
		g.p("\tVADDPS        %s, %s, Z30", acc(r, 1), acc(r, 0))
		g.p("\tVADDPS        %s, %s, Z29", acc(r, 3), acc(r, 2))
		g.p("\tVADDPS        Z29, Z30, Z30 // four terms a lane in float32")
		g.p("\tVCVTPS2PD     Y30, Z29")
		g.p("\tVEXTRACTF32X8 $1, Z30, Y30")
		g.p("\tVCVTPS2PD     Y30, Z30")
		g.p("\tVADDPD        Z29, Z30, Z30")
		g.p("\tVADDPD        %d(R10), Z30, Z30", 64*r)
		g.p("\tVMOVUPD       Z30, %d(R10) // lv[r] += the row's sum", 64*r)
		if r < mr-1 {
			g.p("\tADDQ          BX, AX")
		}
	}
	g.p("\tVZEROUPPER")
	g.p("\tRET")
	g.p("")
}

// expPair writes 2^(fl(alpha·x − m)) of expEpilogue in place of the two
// accumulators x and y, their steps interleaved (each exponential is a
// chain of about a dozen dependent µops): m in Z25, the table in Z24, the
// temporaries Z26…Z31, K3, K4.
//
// With masked, the lanes kept are those of K5 (x) and K6 (y): the compare
// that makes the flush's mask runs under them.
func (g *gen) expPair(x, y string, masked bool) {
	type lane struct{ acc, t, k, r, mask, keep string }
	ls := []lane{{x, "Z26", "Z27", "Z28", "K3", "K5"}, {y, "Z29", "Z30", "Z31", "K4", "K6"}}
	each := func(f func(l lane)) {
		for _, l := range ls {
			f(l)
		}
	}
	each(func(l lane) {
		g.p("\tVMULPS.BCST      alpha+72(FP), %s, %s // s = fl(alpha·t), as Gemm's C", l.acc, l.acc)
	})
	each(func(l lane) { g.p("\tVSUBPS           Z25, %s, %s // a = fl(s − m)", l.acc, l.acc) })
	each(func(l lane) {
		if masked {
			g.p("\tVCMPPS.BCST      $5, %d(R8), %s, %s, %s // kept and not a < −125", etLeast, l.acc, l.keep, l.mask)
			return
		}
		g.p("\tVCMPPS.BCST      $5, %d(R8), %s, %s // not a < −125", etLeast, l.acc, l.mask)
	})
	each(func(l lane) { g.p("\tVADDPS.BCST      %d(R8), %s, %s // t = a + S", etS, l.acc, l.t) })
	each(func(l lane) { g.p("\tVSUBPS.BCST      %d(R8), %s, %s // k = round(16a)/16", etS, l.t, l.k) })
	each(func(l lane) { g.p("\tVSUBPS           %s, %s, %s // r = a − k", l.k, l.acc, l.r) })
	each(func(l lane) { g.p("\tVPERMPS          Z24, %s, %s // T_j", l.t, l.t) })
	each(func(l lane) { g.p("\tVBROADCASTSS     %d(R8), %s", etC3, l.acc) })
	each(func(l lane) { g.p("\tVFMADD213PS.BCST %d(R8), %s, %s", etC2, l.r, l.acc) })
	each(func(l lane) { g.p("\tVFMADD213PS.BCST %d(R8), %s, %s // q(r)", etC1, l.r, l.acc) })
	each(func(l lane) { g.p("\tVMULPS           %s, %s, %s // T_j·r", l.t, l.r, l.r) })
	each(func(l lane) { g.p("\tVFMADD213PS      %s, %s, %s // T_j + T_j·r·q(r)", l.t, l.r, l.acc) })
	each(func(l lane) {
		g.p("\tVSCALEFPS.Z      %s, %s, %s, %s // ·2^⌊k⌋, 0 where a < −125", l.k, l.acc, l.mask, l.acc)
	})
}

func main() {
	var s gen
	s.p("// Code generated by gen_micro.go; DO NOT EDIT.")
	s.p("")
	s.p("//go:build !purego")
	s.p("")
	s.p("#include \"textflag.h\"")
	s.p("")
	s.p("// AVX-512 micro-kernels of mr rows and nv vectors per row: see")
	s.p("// microKernel (kernel.go) for what they compute and gen_micro.go for the")
	s.p("// code. The four chunk totals are on the frame, 64-byte aligned.")
	s.p("")
	var d bytes.Buffer
	fmt.Fprintf(&d, "// Code generated by gen_micro.go; DO NOT EDIT.\n\n//go:build !purego\n\npackage gemm\n\n")
	fmt.Fprintf(&d, "// The generated AVX-512 micro-kernels (micro512_amd64.s): name\n// micro<S|D>512r<rows>v<vectors per row>; see microKernel.\n\n")
	var tabS, tabD []string
	for _, f := range families {
		elem := "float32"
		if f.typ == 'D' {
			elem = "float64"
		}
		var names []string
		s.prefetchA = f.prefetchA
		for mr := 1; mr <= f.maxRows; mr++ {
			s.kernel(f.typ, mr, f.nv, plainKernel)
			nm := name(f.typ, mr, f.nv)
			fmt.Fprintf(&d, "//go:noescape\nfunc %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool)\n\n", nm, elem, elem, elem, elem)
			names = append(names, nm)
		}
		s.prefetchA = false
		line := fmt.Sprintf("\t%d: {%s},", f.nv, strings.Join(names, ", "))
		if f.typ == 'S' {
			tabS = append(tabS, line)
		} else {
			tabD = append(tabD, line)
		}
	}
	fmt.Fprintf(&d, "// The packing twins (see packingKernel).\n\n")
	var packS, packD []string
	for _, pk := range packing {
		elem := "float32"
		if pk.typ == 'D' {
			elem = "float64"
		}
		s.kernel(pk.typ, pk.mr, pk.nv, packKernel)
		nm := packName(pk.typ, pk.mr, pk.nv)
		fmt.Fprintf(&d, "//go:noescape\nfunc %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool, pa *%s)\n\n", nm, elem, elem, elem, elem, elem)
		line := fmt.Sprintf("\t{%d, %d}: %s,", pk.mr, pk.nv, nm)
		if pk.typ == 'S' {
			packS = append(packS, line)
		} else {
			packD = append(packD, line)
		}
	}
	fmt.Fprintf(&d, "// The stair kernels (see Workspace.GemmChainStair).\n\n")
	var stairS, stairD []string
	for _, st := range stairs {
		elem := "float32"
		if st.typ == 'D' {
			elem = "float64"
		}
		s.kernel(st.typ, st.mr, st.nv, stairKernel)
		nm := stairName(st.typ, st.mr, st.nv)
		fmt.Fprintf(&d, "//go:noescape\nfunc %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool)\n\n", nm, elem, elem, elem, elem)
		line := fmt.Sprintf("\t{%d, %d}: %s,", st.mr, st.nv, nm)
		if st.typ == 'S' {
			stairS = append(stairS, line)
		} else {
			stairD = append(stairD, line)
		}
	}
	fmt.Fprintf(&d, "// The exp kernels (see exp512 in scoreexp_amd64.go).\n\n")
	var exps []string
	for mr := 1; mr <= expRows; mr++ {
		s.kernel('S', mr, 4, expKernel)
		fmt.Fprintf(&d, "//go:noescape\nfunc %s%s\n\n", expName(mr), expSignature)
		exps = append(exps, expName(mr))
	}
	var mexps []string
	for mr := 1; mr <= expRows; mr++ {
		s.kernel('S', mr, 4, expMaskedKernel)
		fmt.Fprintf(&d, "//go:noescape\nfunc %s%s\n\n", expMaskedName(mr), expMaskedSignature)
		mexps = append(mexps, expMaskedName(mr))
	}
	// The kernels are called by a switch, not through a table of function
	// values: a call through a function value hides the kernels'
	// //go:noescape from the compiler, and the caller's stack arrays that
	// it passes (scoreExp's stash and masks) would then be allocated on the
	// heap at every call.
	dispatch := func(fn, doc, sig, args string, names []string) {
		fmt.Fprintf(&d, "// %s\nfunc %s(mr int, %s {\n\tswitch mr {\n", doc, fn, strings.TrimPrefix(sig, "("))
		for i, nm := range names {
			fmt.Fprintf(&d, "\tcase %d:\n\t\treturn %s(%s)\n", i+1, nm, args)
		}
		fmt.Fprintf(&d, "\t}\n\tpanic(\"gemm: no exp kernel of that many rows\")\n}\n\n")
	}
	dispatch("exp512", "exp512 runs the exp kernel of mr rows (1…expRows).", expSignature, expArgs, exps)
	dispatch("expm512", "expm512 runs the masked exp kernel of mr rows (1…expRows).", expMaskedSignature, expArgs+", mask", mexps)
	fmt.Fprintf(&d, "// gen512s[nv][mr−1] and gen512d[nv][mr−1] are the kernels of mr rows and\n// nv vectors per row.\n")
	fmt.Fprintf(&d, "var gen512s = map[int][]microKernel[float32]{\n%s\n}\n\n", strings.Join(tabS, "\n"))
	fmt.Fprintf(&d, "var gen512d = map[int][]microKernel[float64]{\n%s\n}\n\n", strings.Join(tabD, "\n"))
	fmt.Fprintf(&d, "// pack512s[{mr, nv}] and pack512d[{mr, nv}] are the packing twins.\n")
	fmt.Fprintf(&d, "var pack512s = map[[2]int]packingKernel[float32]{\n%s\n}\n\n", strings.Join(packS, "\n"))
	fmt.Fprintf(&d, "var pack512d = map[[2]int]packingKernel[float64]{\n%s\n}\n\n", strings.Join(packD, "\n"))
	fmt.Fprintf(&d, "// stair512s[{mr, nv}] and stair512d[{mr, nv}] are the stair kernels.\n")
	fmt.Fprintf(&d, "var stair512s = map[[2]int]microKernel[float32]{\n%s\n}\n\n", strings.Join(stairS, "\n"))
	fmt.Fprintf(&d, "var stair512d = map[[2]int]microKernel[float64]{\n%s\n}\n", strings.Join(stairD, "\n"))
	src, err := format.Source(d.Bytes())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("micro512_amd64.s", s.b.Bytes(), 0o644); err != nil {
		panic(err)
	}
	if err := os.WriteFile("micro512_amd64.go", src, 0o644); err != nil {
		panic(err)
	}
}
