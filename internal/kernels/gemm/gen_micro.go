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

// The kernels generated: element type, vectors per row, rows 1…maxRows.
var families = []struct {
	typ     byte // 'S' float32, 'D' float64
	nv      int
	maxRows int
}{
	{'S', 1, 12},
	{'S', 2, 12},
	{'S', 4, 6},
	{'D', 1, 12},
	{'D', 2, 12},
	{'D', 4, 6},
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

type gen struct{ b bytes.Buffer }

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

func (g *gen) kernel(typ byte, mr, nv int, pack bool) {
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
	if pack {
		// pa lives in R10, the second row base, which these rows do not use;
		// the copy goes through the last temporary, masked to mr lanes (K1).
		if ad.off > 0 || mr*size > 64 {
			panic("no packing twin for this tile")
		}
		nm, extra, argSize = packName(typ, mr, nv), ", pa *"+elem, paOff+8
	}

	g.p("// func %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool%s)", nm, elem, elem, elem, elem, extra)
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

	step := func(op string) {
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
		for r := 0; r < mr; r++ {
			t := temps[r%len(temps)]
			g.p("\t%s %s, %s", bcast, ad.addrs[r], t)
			for v := 0; v < nv; v++ {
				g.p("\t%s %s, %s, %s", op, breg(v), t, acc(r*nv+v))
			}
		}
		g.p("\tADDQ R12, SI")
		if ad.off > 0 {
			g.p("\tADDQ R12, R10")
		}
		g.p("\tADDQ R13, DI")
	}

	g.p("")
	g.p("chunk:")
	g.p("\tMOVQ    R11, AX")
	g.p("\tCMPQ    CX, AX")
	g.p("\tCMOVQLT CX, AX // steps in this chunk: min(kb, depth left)")
	g.p("\tSUBQ    AX, CX")
	g.p("\t// The first step sets the accumulators, the others add.")
	step(mul)
	g.p("\tDECQ AX")
	g.p("\tJZ   stepped")
	g.p("\tCMPQ AX, $3")
	g.p("\tJLT  single")
	step(fma)
	step(fma)
	step(fma)
	g.p("\tSUBQ $3, AX")
	g.p("\tJZ   stepped")
	g.p("\tCMPQ AX, $4")
	g.p("\tJLT  single")
	g.p("")
	g.p("quad: // four steps a turn: chunks are 4, 8, 16 or 32 steps")
	step(fma)
	step(fma)
	step(fma)
	step(fma)
	g.p("\tSUBQ $4, AX")
	g.p("\tJZ   stepped")
	g.p("\tCMPQ AX, $4")
	g.p("\tJGE  quad")
	g.p("")
	g.p("single:")
	step(fma)
	g.p("\tDECQ AX")
	g.p("\tJNZ  single")
	g.p("")
	g.p("stepped:")
	g.p("\tTESTQ CX, CX")
	g.p("\tJZ    last")
	g.p("\tMOVQ  BX, AX // chunk c goes into total c mod 4")
	g.p("\tANDQ  $3, AX")
	g.p("\tIMULQ $%d, AX", total)
	g.p("\tADDQ  DX, AX")
	g.p("\tCMPQ  BX, $4")
	g.p("\tJGE   flush")
	for i := 0; i < nacc; i++ {
		g.p("\t%s %s, %d(AX)", mov, acc(i), i*64)
	}
	g.p("\tINCQ BX")
	g.p("\tJMP  chunk")
	g.p("")
	g.p("flush:")
	for i := 0; i < nacc; i++ {
		g.p("\t%s %d(AX), %s, %s", add, i*64, acc(i), acc(i))
		g.p("\t%s %s, %d(AX)", mov, acc(i), i*64)
	}
	g.p("\tINCQ BX")
	g.p("\tJMP  chunk")
	g.p("")
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
		for mr := 1; mr <= f.maxRows; mr++ {
			s.kernel(f.typ, mr, f.nv, false)
			nm := name(f.typ, mr, f.nv)
			fmt.Fprintf(&d, "//go:noescape\nfunc %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool)\n\n", nm, elem, elem, elem, elem)
			names = append(names, nm)
		}
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
		s.kernel(pk.typ, pk.mr, pk.nv, true)
		nm := packName(pk.typ, pk.mr, pk.nv)
		fmt.Fprintf(&d, "//go:noescape\nfunc %s(k, kb int, a *%s, rs, ps int, b *%s, bs int, c *%s, ldc int, alpha, beta %s, loadC bool, pa *%s)\n\n", nm, elem, elem, elem, elem, elem)
		line := fmt.Sprintf("\t{%d, %d}: %s,", pk.mr, pk.nv, nm)
		if pk.typ == 'S' {
			packS = append(packS, line)
		} else {
			packD = append(packD, line)
		}
	}
	fmt.Fprintf(&d, "// gen512s[nv][mr−1] and gen512d[nv][mr−1] are the kernels of mr rows and\n// nv vectors per row.\n")
	fmt.Fprintf(&d, "var gen512s = map[int][]microKernel[float32]{\n%s\n}\n\n", strings.Join(tabS, "\n"))
	fmt.Fprintf(&d, "var gen512d = map[int][]microKernel[float64]{\n%s\n}\n\n", strings.Join(tabD, "\n"))
	fmt.Fprintf(&d, "// pack512s[{mr, nv}] and pack512d[{mr, nv}] are the packing twins.\n")
	fmt.Fprintf(&d, "var pack512s = map[[2]int]packingKernel[float32]{\n%s\n}\n\n", strings.Join(packS, "\n"))
	fmt.Fprintf(&d, "var pack512d = map[[2]int]packingKernel[float64]{\n%s\n}\n", strings.Join(packD, "\n"))
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
