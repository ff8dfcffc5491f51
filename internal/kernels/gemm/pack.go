package gemm

// packBlock copies op(B)[pc:pc+kcb, jc:jc+ncb] into strips of nr columns:
// strip s holds columns jc+s·nr…, row after row (dst[s·kcb·nr + p·nr + j]),
// the columns past ncb zero.
func packBlock[T Float](dst, b []T, tB bool, ldb, pc, jc, kcb, ncb, nr int) {
	for s := 0; s*nr < ncb; s++ {
		strip := dst[s*kcb*nr : (s+1)*kcb*nr]
		j0, wd := jc+s*nr, min(nr, ncb-s*nr)
		if !tB { // rows of B are rows of op(B): copy nr-wide pieces
			for p := 0; p < kcb; p++ {
				out := strip[p*nr : (p+1)*nr]
				copy(out, b[(pc+p)*ldb+j0:(pc+p)*ldb+j0+wd])
				clear(out[wd:])
			}
			continue
		}
		// B stored [n, k]: row j of B is column j of op(B), contiguous in
		// depth; it goes down a column of the strip.
		for j := 0; j < wd; j++ {
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kcb]
			for p, v := range src {
				strip[p*nr+j] = v
			}
		}
		if wd < nr {
			for p := 0; p < kcb; p++ {
				clear(strip[p*nr+wd : (p+1)*nr])
			}
		}
	}
}

// packStrip copies op(A)[0:h, pc:pc+kcb] (h < mr rows) into one strip of mr
// rows, depth after depth (dst[p·mr + r]), the rows past h zero.
func packStrip[T Float](dst, a []T, tA bool, lda, pc, kcb, h, mr int) {
	dst = dst[:kcb*mr]
	clear(dst)
	for r := 0; r < h; r++ {
		for p := 0; p < kcb; p++ {
			if tA {
				dst[p*mr+r] = a[(pc+p)*lda+r]
			} else {
				dst[p*mr+r] = a[r*lda+pc+p]
			}
		}
	}
}
