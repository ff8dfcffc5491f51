package gemm

import "unsafe"

// packBlock copies op(B)[pc:pc+kcb, jc:jc+ncb] into strips of kn.nr
// columns: strip s holds columns jc+s·nr…, row after row
// (dst[s·kcb·nr + p·nr + j]), the columns past ncb zero.
func packBlock[T Float](kn *kernel[T], dst, b []T, tB bool, ldb, pc, jc, kcb, ncb int) {
	nr := kn.nr
	if !tB { // rows of B are rows of op(B): cut each into nr-wide pieces
		// Groups of rows: a group's rows are read along their length, strip
		// after strip, which the prefetchers follow (one strip at a time
		// down all kcb rows would jump a stride per line), and each piece
		// of a strip is written contiguously.
		const group = 16
		for p0 := 0; p0 < kcb; p0 += group {
			g := min(group, kcb-p0)
			for s := 0; s*nr < ncb; s++ {
				j0, wd := jc+s*nr, min(nr, ncb-s*nr)
				out := dst[s*kcb*nr+p0*nr : s*kcb*nr+(p0+g)*nr]
				src := b[(pc+p0)*ldb+j0 : (pc+p0+g-1)*ldb+j0+wd]
				if wd == nr && kn.rows != nil {
					size := int(unsafe.Sizeof(src[0]))
					kn.rows(unsafe.Pointer(&out[0]), nr*size, unsafe.Pointer(&src[0]), ldb*size, g, nr*size)
					continue
				}
				for p := 0; p < g; p++ {
					copy(out[p*nr:p*nr+wd], src[p*ldb:p*ldb+wd])
					clear(out[p*nr+wd : (p+1)*nr])
				}
			}
		}
		return
	}
	tr, tblock := kn.trans, kn.tblock
	for s := 0; s*nr < ncb; s++ {
		strip := dst[s*kcb*nr : (s+1)*kcb*nr]
		j0, wd := jc+s*nr, min(nr, ncb-s*nr)
		// B stored [n, k]: row j of B is column j of op(B), contiguous in
		// depth; it goes down a column of the strip. The transposer takes
		// the whole blocks, the loops the rest.
		wt, kt := 0, 0
		if tr != nil {
			wt, kt = wd/tblock*tblock, kcb/tblock*tblock
			if wt > 0 && kt > 0 {
				src := b[j0*ldb+pc : (j0+wt-1)*ldb+pc+kt] // bounds of what it reads
				tr(&strip[0], nr, &src[0], ldb, wt, kt)
			}
		}
		for j := 0; j < wd; j++ {
			from := kt
			if j >= wt {
				from = 0
			}
			src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kcb]
			for p := from; p < kcb; p++ {
				strip[p*nr+j] = src[p]
			}
		}
		if wd < nr {
			for p := 0; p < kcb; p++ {
				clear(strip[p*nr+wd : (p+1)*nr])
			}
		}
	}
}

// packStrip copies op(A)[i0:i0+h, pc:pc+kcb] (h ≤ mr rows) into one strip
// of mr rows, depth after depth (dst[p·mr + r]), the rows past h zero.
func packStrip[T Float](kn *kernel[T], dst, a []T, tA bool, lda, i0, pc, kcb, h int) {
	mr := kn.mr
	dst = dst[:kcb*mr]
	if h < mr {
		clear(dst)
	}
	if tA { // A stored [k, m]: the h values of a depth step are contiguous
		src := a[pc*lda+i0 : (pc+kcb-1)*lda+i0+h] // what is read
		if size := int(unsafe.Sizeof(src[0])); h == mr && kn.rows != nil && mr*size%8 == 0 {
			kn.rows(unsafe.Pointer(&dst[0]), mr*size, unsafe.Pointer(&src[0]), lda*size, kcb, mr*size)
			return
		}
		for p := 0; p < kcb; p++ {
			copy(dst[p*mr:p*mr+h], src[p*lda:p*lda+h])
		}
		return
	}
	for r := 0; r < h; r++ {
		src := a[(i0+r)*lda+pc : (i0+r)*lda+pc+kcb]
		for p, v := range src {
			dst[p*mr+r] = v
		}
	}
}

// aBlockBytes bounds a group of packed strips of a transposed A
// (packABlock): with the packed block of op(B) it stays in the core's L2
// cache while the strips run over the block's columns.
const aBlockBytes = 192 << 10

// aStrips returns how many strips of kn.mr rows packABlock packs at once
// for depth blocks of kc steps of elements of size bytes.
func aStrips[T Float](kn *kernel[T], kc, size int) int {
	return max(1, aBlockBytes/(kc*kn.mr*size))
}

// packABlock packs strips strips of op(A) = Aᵀ, A stored [k, m]: rows
// i0…i0+strips·mr−1 of op(A) over depth pc…pc+kcb−1, strip s as packStrip
// lays it out ([kcb][mr]) at dst[s·kcb·mr]. It reads A along its rows
// (strips·mr contiguous values a depth step, which the prefetchers follow)
// where packing strip after strip would read mr values a row and step
// onto a new row, often a new page, for each.
func packABlock[T Float](kn *kernel[T], dst, a []T, lda, i0, pc, kcb, strips int) {
	mr := kn.mr
	w := strips * mr
	dst = dst[:strips*kcb*mr]
	src := a[pc*lda+i0 : (pc+kcb-1)*lda+i0+w] // what is read
	if size := int(unsafe.Sizeof(src[0])); kn.pieces != nil && mr*size%8 == 0 {
		// Depth step p: a row of A, cut into strips pieces of mr values,
		// piece s to dst[s·kcb·mr + p·mr].
		kn.pieces(unsafe.Pointer(&dst[0]), kcb*mr*size, unsafe.Pointer(&src[0]), lda*size, kcb, strips, mr*size)
		return
	}
	for p := 0; p < kcb; p++ {
		row := src[p*lda : p*lda+w]
		for s := 0; s < strips; s++ {
			copy(dst[s*kcb*mr+p*mr:s*kcb*mr+(p+1)*mr], row[s*mr:(s+1)*mr])
		}
	}
}
