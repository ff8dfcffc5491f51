package cuda

import (
	"fmt"
	"math"
	"unsafe"
)

// The launchers of nn's kernels (kernels/nn.cu) on device Buffers. Each checks its operands
// (types and lengths, with errors naming them), then queues its kernels on the worker's stream
// and returns without waiting: Download or Synchronize waits, and reports a fault. They
// allocate nothing; where a kernel needs scratch memory the caller passes a Float64 Work
// buffer of the size the matching ...Workspace function gives, so that a graph machine plans
// it once with the rest. Float operands of one call share one element type, Float32 or
// Float64; indices and targets are Int32.

// operand is one Buffer argument of a launcher: its name in errors, and the element type and
// length it must have (at least n elements when atLeast; absent allowed when optional).
type operand struct {
	name     string
	b        *Buffer
	dt       DType
	n        int
	optional bool
	atLeast  bool
}

// checkOperands returns an error naming the first operand of the wrong type or length.
func checkOperands(op string, ops []operand) error {
	for _, o := range ops {
		switch {
		case o.b == nil && o.optional:
		case o.b == nil:
			return fmt.Errorf("cuda: %s: %s is nil, want %v[%d]", op, o.name, o.dt, o.n)
		case o.b.dt != o.dt:
			return fmt.Errorf("cuda: %s: %s is %v, want %v[%d]", op, o.name, o.b, o.dt, o.n)
		case o.atLeast && o.b.n < o.n:
			return fmt.Errorf("cuda: %s: %s is %v, want at least %d elements", op, o.name, o.b, o.n)
		case !o.atLeast && o.b.n != o.n:
			return fmt.Errorf("cuda: %s: %s is %v, want %v[%d]", op, o.name, o.b, o.dt, o.n)
		}
	}
	return nil
}

// launchOn checks the operands and runs body on the worker, after checking that every operand
// belongs to the current context.
func launchOn(op string, ops []operand, body func(s *state) error) error {
	if err := checkOperands(op, ops); err != nil {
		return err
	}
	if !Enabled() {
		return ErrNoDevice
	}
	return run(op, func(s *state) error {
		for _, o := range ops {
			if o.b != nil {
				if err := o.b.usable(s, o.name); err != nil {
					return fmt.Errorf("cuda: %s: %w", op, err)
				}
			}
		}
		return body(s)
	})
}

// floatOf returns the element type of the float operand b named name.
func floatOf(op, name string, b *Buffer) (DType, dtype, error) {
	if b == nil {
		return 0, 0, fmt.Errorf("cuda: %s: %s is nil", op, name)
	}
	dt, ok := b.dt.float()
	if !ok {
		return 0, 0, fmt.Errorf("cuda: %s: %s is %v, want float32 or float64", op, name, b)
	}
	return b.dt, dt, nil
}

func ptrOf(b *Buffer) devptr {
	if b == nil {
		return 0
	}
	return b.ptr
}

// ewGrid is the grid of the grid-stride kernels over n elements, blocks of ewThreads.
const ewThreads = 256

func ewGrid(n int) [3]int { return [3]int{max(1, min(ceilDiv(n, ewThreads), 1<<20)), 1, 1} }

// startNN launches kernel <base>_<dt> of module nn.
func (s *state) startNN(base string, dt dtype, grid [3]int, block int, params unsafe.Pointer) error {
	return s.start("nn", base+"_"+dt.String(), grid, block, 0, params)
}

// ---- elementwise -----------------------------------------------------------------------------

func ew(op string, kernel string, code int32, y, a, b *Buffer) error {
	DT, dt, err := floatOf(op, "a", a)
	if err != nil {
		return err
	}
	n := a.n
	ops := []operand{{name: "a", b: a, dt: DT, n: n}, {name: "y", b: y, dt: DT, n: n}}
	if kernel != "fg_gelu_fwd" && kernel != "fg_copy" {
		ops = append(ops, operand{name: "b", b: b, dt: DT, n: n})
	}
	return launchOn(op, ops, func(s *state) error {
		if n == 0 {
			return nil
		}
		kp := ewParams{a: a.ptr, b: ptrOf(b), y: y.ptr, n: int64(n), op: code}
		// 16 bytes at a time where the length and every buffer's alignment allow it.
		if w := 16 / DT.Size(); n%w == 0 && n < 1<<31 && (a.ptr|ptrOf(b)|y.ptr)%16 == 0 {
			return s.startNN(kernel+"_vec", dt, ewGrid(n/w), ewThreads, unsafe.Pointer(&kp))
		}
		return s.startNN(kernel, dt, ewGrid(n), ewThreads, unsafe.Pointer(&kp))
	})
}

// Add computes y = a + b elementwise (residual connections); y may be a or b.
func Add(y, a, b *Buffer) error { return ew("add", "fg_ew", ewAdd, y, a, b) }

// Assign copies a into y (one element type and length; not overlapping unless the same), a
// kernel queued on the stream like every launch (Copy is a copy the host waits for).
func Assign(y, a *Buffer) error { return ew("assign", "fg_copy", 0, y, a, nil) }

// Mul computes y = a∘b elementwise; y may be a or b.
func Mul(y, a, b *Buffer) error { return ew("mul", "fg_ew", ewMul, y, a, b) }

// GELU computes y = gelu(x) elementwise, the tanh form of nn.GELU (y may be x):
//
//	gelu(x) = ½·x·(1 + tanh(u)) = x·σ(2u),  u = √(2/π)·(x + 0.044715·x³)
func GELU(y, x *Buffer) error { return ew("gelu forward", "fg_gelu_fwd", 0, y, x, nil) }

// GELUBackward computes dx = dy∘gelu'(x) elementwise (dx may be x or dy):
//
//	gelu'(x) = s + 2·x·s·(1 − s)·√(2/π)·(1 + 3·0.044715·x²),  s = σ(2u)
func GELUBackward(dx, x, dy *Buffer) error {
	return ew("gelu backward", "fg_gelu_bwd", 0, dx, x, dy)
}

// Affine computes y[r, j] = x[r, j]·gamma[j] + beta[j] over the rows of x [rows, d] (nn's
// affine op: Linear's bias when gamma is nil, a norm's gain and bias). d = len(gamma) or
// len(beta); at least one must be set; y may be x.
func Affine(y, x, gamma, beta *Buffer) error {
	const op = "affine"
	DT, dt, err := floatOf(op, "x", x)
	if err != nil {
		return err
	}
	d := max(gamma.Len(), beta.Len())
	if gamma == nil && beta == nil || d == 0 || x.n%d != 0 {
		return fmt.Errorf("cuda: %s: x %v, gamma %v, beta %v: want x [rows, d] with gamma and/or beta [d], d ≥ 1", op, x, gamma, beta)
	}
	ops := []operand{{name: "x", b: x, dt: DT, n: x.n}, {name: "y", b: y, dt: DT, n: x.n},
		{name: "gamma", b: gamma, dt: DT, n: d, optional: true}, {name: "beta", b: beta, dt: DT, n: d, optional: true}}
	return launchOn(op, ops, func(s *state) error {
		if x.n == 0 {
			return nil
		}
		kp := ewParams{a: x.ptr, b: ptrOf(gamma), c: ptrOf(beta), y: y.ptr, n: int64(x.n), d: int64(d)}
		// 16 bytes at a time where the rows and every buffer allow it.
		w := 16 / DT.Size()
		if x.n < 1<<31 && d%w == 0 && (x.ptr|y.ptr|ptrOf(gamma)|ptrOf(beta))%16 == 0 {
			return s.startNN("fg_affine_vec", dt, ewGrid(x.n/w), ewThreads, unsafe.Pointer(&kp))
		}
		return s.startNN("fg_affine", dt, ewGrid(x.n), ewThreads, unsafe.Pointer(&kp))
	})
}

// ---- column sums -----------------------------------------------------------------------------

// colsumChunks returns the rows per chunk and the number of chunks of the column sums over
// rows rows: at most 256 chunks of at least 64 rows, fixed by rows alone so that the sums are
// taken in the same order on every run.
func colsumChunks(rows int) (chunkRows, nchunks int) {
	chunkRows = max(64, ceilDiv(rows, 256))
	return chunkRows, max(1, ceilDiv(rows, chunkRows))
}

// ColSumWorkspace returns the Float64 elements of work ColSum needs for g [rows, d].
func ColSumWorkspace(rows, d int) int {
	_, n := colsumChunks(rows)
	return n * d
}

// ColSumParams describes the column sums of g [Rows, D] (the gradient of a bias, or with X of
// a gain), in float64, deterministic (two stages, a fixed order):
//
//	Out[j] = Σ_r G[r, j]            (X nil)
//	Out[j] = Σ_r X[r, j]·G[r, j]    (X set)
//
// With Accumulate the sums are added to Out. Work: Float64 [ColSumWorkspace(Rows, D)].
type ColSumParams struct {
	Rows, D    int
	G, X, Out  *Buffer
	Work       *Buffer
	Accumulate bool
}

// ColSum computes the column sums p describes.
func ColSum(p ColSumParams) error {
	const op = "column sum"
	DT, dt, err := floatOf(op, "G", p.G)
	if err != nil {
		return err
	}
	if p.Rows < 0 || p.D < 1 {
		return fmt.Errorf("cuda: %s: Rows=%d D=%d: want Rows ≥ 0, D ≥ 1", op, p.Rows, p.D)
	}
	chunkRows, nchunks := colsumChunks(p.Rows)
	n := p.Rows * p.D
	ops := []operand{{name: "G", b: p.G, dt: DT, n: n}, {name: "X", b: p.X, dt: DT, n: n, optional: true},
		{name: "Out", b: p.Out, dt: DT, n: p.D}, {name: "Work", b: p.Work, dt: Float64, n: nchunks * p.D, atLeast: true}}
	return launchOn(op, ops, func(s *state) error {
		kp := colsumParams{g: p.G.ptr, x: ptrOf(p.X), work: p.Work.ptr, out: p.Out.ptr,
			rows: int64(p.Rows), d: int64(p.D), chunkRows: int64(chunkRows), nchunks: int64(nchunks)}
		if p.X != nil {
			kp.mode = 1
		}
		if p.Accumulate {
			kp.accumulate = 1
		}
		return s.colsum(&kp, dt)
	})
}

// colsum launches both stages of the column sums kp describes (modes 0 and 1), the first on
// 16-byte vectors where the rows and the buffers' alignment allow it.
func (s *state) colsum(kp *colsumParams, dt dtype) error {
	d := int(kp.d)
	w := 16 / dt.size()
	grid := [3]int{ceilDiv(d, 32), int(kp.nchunks), 1}
	partial := "fg_colsum_partial"
	if d%w == 0 && kp.rows*kp.d < 1<<31 && (kp.g|kp.x)%16 == 0 {
		grid[0], partial = ceilDiv(d/w, 32), "fg_colsum_partial_vec"
	}
	if err := s.startNN(partial, dt, grid, 32*colsumTY, unsafe.Pointer(kp)); err != nil {
		return err
	}
	return s.colsumFinal(kp, dt)
}

// colsumFinal launches the second stage of the column sums kp describes.
func (s *state) colsumFinal(kp *colsumParams, dt dtype) error {
	return s.startNN("fg_colsum_final", dt, [3]int{ceilDiv(int(kp.d), 32), 1, 1}, 32*colsumTY, unsafe.Pointer(kp))
}

const colsumTY = 8 // FG_COLSUM_TY: rows (chunks) a column's sums are split over in a block

// ---- embedding -------------------------------------------------------------------------------

// Gather computes y[m, :] = table[idx[m], :] (nn.EmbedNode): table [V, d], idx Int32 [M],
// y [M, d]. An index outside [0, V) gives a row of NaN (check indices on the host, where they
// come from).
func Gather(y, table, idx *Buffer, d int) error {
	const op = "embedding gather"
	dt, ops, err := embedding(op, "table", table, idx, "y", y, d)
	if err != nil {
		return err
	}
	m := idx.Len()
	return launchOn(op, ops, func(s *state) error {
		if m == 0 {
			return nil
		}
		kp := embedParams{table: table.ptr, idx: idx.ptr, y: y.ptr, m: int64(m), v: int64(table.n / d), d: int64(d)}
		return s.startNN("fg_gather", dt, ewGrid(m*d), ewThreads, unsafe.Pointer(&kp))
	})
}

// ScatterAdd computes the gradient of Gather with respect to the table (nn's scatterAddOp):
//
//	dtable[v, :] = Σ_{m: idx[m] = v} dy[m, :]     dtable [V, d], idx Int32 [M], dy [M, d]
//
// summed in increasing m in the element type, as on the CPU, with no atomics (a block per
// table row reads every index). With accumulate the sums are added to dtable's contents.
// Indices outside [0, V) are skipped.
func ScatterAdd(dtable, idx, dy *Buffer, d int, accumulate bool) error {
	const op = "embedding scatter-add"
	dt, ops, err := embedding(op, "dtable", dtable, idx, "dy", dy, d)
	if err != nil {
		return err
	}
	m := idx.Len()
	return launchOn(op, ops, func(s *state) error {
		v := dtable.n / d
		if v == 0 {
			return nil
		}
		kp := embedParams{table: dtable.ptr, idx: ptrOf(idx), y: ptrOf(dy), m: int64(m), v: int64(v), d: int64(d)}
		if accumulate {
			kp.accumulate = 1
		}
		return s.startNN("fg_scatter", dt, [3]int{min(v, 1<<20), 1, 1}, ewThreads, unsafe.Pointer(&kp))
	})
}

// embedding checks an embedding table [V, d] (named tname) and returns its element type and
// the operands of a gather or a scatter-add: the table, idx Int32 [M] and rows [M, d] (named
// rname).
func embedding(op, tname string, table, idx *Buffer, rname string, rows *Buffer, d int) (dtype, []operand, error) {
	DT, dt, err := floatOf(op, tname, table)
	if err != nil {
		return 0, nil, err
	}
	if d < 1 || table.n%d != 0 {
		return 0, nil, fmt.Errorf("cuda: %s: %s %v is not [V, %d]", op, tname, table, d)
	}
	m := idx.Len()
	return dt, []operand{{name: tname, b: table, dt: DT, n: table.n}, {name: "idx", b: idx, dt: Int32, n: m}, {name: rname, b: rows, dt: DT, n: m * d}}, nil
}

// ---- attention heads -------------------------------------------------------------------------

// HeadsParams describes the moves between rows X [B·N, C] and attention heads [B, H, N, D]
// (nn's headsOp), over columns [Off, Off + H·D) of the rows (Off + H·D ≤ C):
//
//	split (Split):  Y[b, h, l, j] = X[b·N + l, Off + h·D + j]          X [B·N, C], Y [B, H, N, D]
//	merge:          Y[b·N + l, Off + h·D + j] = X[b, h, l, j]          X [B, H, N, D], Y [B·N, C]
//
// the merge writing zeros in Y's other columns. X and Y are Float32 or Float64 of one type,
// with fewer than 2³¹ elements each. The kernel moves 16 bytes at a time where D, C, Off and
// the buffers' addresses allow it, one element otherwise.
type HeadsParams struct {
	Split              bool
	B, N, H, D, C, Off int
	X, Y               *Buffer
}

// Heads performs the move p describes.
func Heads(p HeadsParams) error {
	const op = "attention heads"
	DT, dt, err := floatOf(op, "X", p.X)
	if err != nil {
		return err
	}
	heads, okH := mulSizes(p.B, p.H, p.N, p.D)
	rows, okR := mulSizes(p.B, p.N, p.C)
	if p.B < 1 || p.N < 1 || p.H < 1 || p.D < 1 || p.Off < 0 || p.Off+p.H*p.D > p.C || okH != nil || okR != nil || heads >= 1<<31 || rows >= 1<<31 {
		return fmt.Errorf("cuda: %s: B=%d N=%d H=%d D=%d C=%d Off=%d: want sizes ≥ 1, Off ≥ 0, Off + H·D ≤ C and fewer than 2^31 elements", op, p.B, p.N, p.H, p.D, p.C, p.Off)
	}
	xn, yn := rows, heads
	if !p.Split {
		xn, yn = heads, rows
	}
	ops := []operand{{name: "X", b: p.X, dt: DT, n: xn}, {name: "Y", b: p.Y, dt: DT, n: yn}}
	return launchOn(op, ops, func(s *state) error {
		kp := headsParams{x: p.X.ptr, y: p.Y.ptr, b: int64(p.B), n: int64(p.N), h: int64(p.H), d: int64(p.D), c: int64(p.C), off: int64(p.Off)}
		if p.Split {
			kp.split = 1
		}
		w := 16 / DT.Size()
		kernel := "fg_heads"
		if p.D%w != 0 || p.C%w != 0 || p.Off%w != 0 || p.X.ptr%16 != 0 || p.Y.ptr%16 != 0 {
			kernel, w = "fg_heads1", 1
		}
		return s.startNN(kernel, dt, ewGrid(yn/w), ewThreads, unsafe.Pointer(&kp))
	})
}

// ---- LayerNorm / RMSNorm ---------------------------------------------------------------------

// NormParams describes LayerNorm (RMS false) or RMSNorm (RMS true) over the rows of
// X [Rows, D], nn's normOp followed by its affine op:
//
//	LayerNorm: x̂ = (x − μ)·r,  μ = mean(x),  r = 1/√(mean((x − μ)²) + Eps)
//	RMSNorm:   x̂ = x·r,        μ = 0,        r = 1/√(mean(x²) + Eps)
//	Y = x̂·Gamma + Beta         (Gamma, Beta [D], each optional)
//
// with the statistics in float64. The forward writes Mean = μ and Rstd = r (Float64 [Rows])
// and, when Y is set, Y. The backward reads X, Mean, Rstd (of the forward), DY and Gamma, and
// writes
//
//	DX = r·(g − mean(g) − x̂·mean(g∘x̂)),  g = DY∘Gamma   (mean(g) dropped for RMSNorm)
//	DGamma = Σ_rows DY∘x̂,  DBeta = Σ_rows DY             (each optional; added with Accumulate)
//
// DX may be nil. DGamma and DBeta need Work: Float64 [NormWorkspace(Rows, D)].
type NormParams struct {
	Rows, D       int
	Eps           float64
	RMS           bool
	X, Gamma      *Buffer
	Beta, Y       *Buffer
	Mean, Rstd    *Buffer
	DY, DX        *Buffer
	DGamma, DBeta *Buffer
	Work          *Buffer
	Accumulate    bool
}

// NormWorkspace returns the Float64 elements of work NormBackward needs for DGamma and DBeta.
func NormWorkspace(rows, d int) int { return 2 * ColSumWorkspace(rows, d) }

// check names the launch (op) and checks p: the element type and the operands of the
// forward or the backward.
func (p *NormParams) check(backward bool) (op string, dt dtype, ops []operand, err error) {
	op = "layer norm forward"
	switch {
	case p.RMS && backward:
		op = "rms norm backward"
	case p.RMS:
		op = "rms norm forward"
	case backward:
		op = "layer norm backward"
	}
	dt, ops, err = p.operands(op, backward)
	return op, dt, ops, err
}

func (p *NormParams) operands(op string, backward bool) (dtype, []operand, error) {
	DT, dt, err := floatOf(op, "X", p.X)
	if err != nil {
		return 0, nil, err
	}
	if p.Rows < 0 || p.D < 1 {
		return 0, nil, fmt.Errorf("cuda: %s: Rows=%d D=%d: want Rows ≥ 0, D ≥ 1", op, p.Rows, p.D)
	}
	if !(p.Eps > 0) || math.IsInf(p.Eps, 1) {
		return 0, nil, fmt.Errorf("cuda: %s: Eps=%g, want positive and finite", op, p.Eps)
	}
	n := p.Rows * p.D
	ops := []operand{{name: "X", b: p.X, dt: DT, n: n}, {name: "Gamma", b: p.Gamma, dt: DT, n: p.D, optional: true},
		{name: "Mean", b: p.Mean, dt: Float64, n: p.Rows}, {name: "Rstd", b: p.Rstd, dt: Float64, n: p.Rows}}
	if !backward {
		ops = append(ops, operand{name: "Beta", b: p.Beta, dt: DT, n: p.D, optional: true}, operand{name: "Y", b: p.Y, dt: DT, n: n, optional: true})
		return dt, ops, nil
	}
	ops = append(ops, operand{name: "DY", b: p.DY, dt: DT, n: n}, operand{name: "DX", b: p.DX, dt: DT, n: n, optional: true},
		operand{name: "DGamma", b: p.DGamma, dt: DT, n: p.D, optional: true}, operand{name: "DBeta", b: p.DBeta, dt: DT, n: p.D, optional: true})
	if p.DGamma != nil || p.DBeta != nil {
		ops = append(ops, operand{name: "Work", b: p.Work, dt: Float64, n: NormWorkspace(p.Rows, p.D), atLeast: true})
	}
	return dt, ops, nil
}

// startRows launches the row kernel name (fg_norm_fwd, fg_norm_bwd) over p's rows.
func (p *NormParams) startRows(s *state, name string, dt dtype) error {
	kp := normParams{x: p.X.ptr, y: ptrOf(p.Y), gamma: ptrOf(p.Gamma), beta: ptrOf(p.Beta), mean: p.Mean.ptr, rstd: p.Rstd.ptr,
		dy: ptrOf(p.DY), dx: ptrOf(p.DX), rows: int64(p.Rows), d: int64(p.D), eps: p.Eps}
	if !p.RMS {
		kp.center = 1
	}
	return s.startNN(name, dt, [3]int{ceilDiv(p.Rows, normRowsPerBlock), 1, 1}, 32*normRowsPerBlock, unsafe.Pointer(&kp))
}

const normRowsPerBlock = 4 // FG_NORM_WARPS: a warp per row

// NormForward computes Mean, Rstd and (when set) Y as p describes.
func NormForward(p NormParams) error {
	op, dt, ops, err := p.check(false)
	if err != nil {
		return err
	}
	return launchOn(op, ops, func(s *state) error {
		if p.Rows == 0 {
			return nil
		}
		return p.startRows(s, "fg_norm_fwd", dt)
	})
}

// NormBackward computes DX, DGamma and DBeta (those set) as p describes.
func NormBackward(p NormParams) error {
	op, dt, ops, err := p.check(true)
	if err != nil {
		return err
	}
	return launchOn(op, ops, func(s *state) error {
		if p.Rows == 0 && !p.Accumulate {
			// No rows: the sums are zero.
			for _, b := range []*Buffer{p.DGamma, p.DBeta} {
				if b != nil {
					if err := memset8(b.ptr, 0, b.Bytes()); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if p.DX != nil && p.Rows > 0 {
			if err := p.startRows(s, "fg_norm_bwd", dt); err != nil {
				return err
			}
		}
		if p.DGamma == nil && p.DBeta == nil {
			return nil
		}
		chunkRows, nchunks := colsumChunks(p.Rows)
		cp := colsumParams{g: p.DY.ptr, x: p.X.ptr, mean: p.Mean.ptr, rstd: p.Rstd.ptr, work: p.Work.ptr,
			rows: int64(p.Rows), d: int64(p.D), chunkRows: int64(chunkRows), nchunks: int64(nchunks), mode: 2}
		if p.Accumulate {
			cp.accumulate = 1
		}
		grid := [3]int{ceilDiv(p.D, 32), nchunks, 1}
		if err := s.startNN("fg_colsum_partial", dt, grid, 256, unsafe.Pointer(&cp)); err != nil {
			return err
		}
		for i, out := range []*Buffer{p.DGamma, p.DBeta} {
			if out == nil {
				continue
			}
			fp := cp
			fp.out = out.ptr
			fp.work += devptr(int64(i) * cp.nchunks * cp.d * 8)
			if err := s.colsumFinal(&fp, dt); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- cross-entropy ---------------------------------------------------------------------------

// CrossEntropyParams describes nn.CrossEntropy fused with its log-softmax, over Logits [M, V]
// and Int32 Targets [M]:
//
//	Loss[0] = −(1/n)·Σ_{m: t[m] ≠ IgnoreIndex} logsoftmax(Logits[m, :])[t[m]],   n = #{m: t[m] ≠ IgnoreIndex}
//	DLogits[m, :] = DLoss[0]/n·(softmax(Logits[m, :]) − onehot(t[m]))          (0 for ignored rows)
//
// with log-sum-exps and sums in float64; with every row ignored the loss is 0. Loss and DLoss
// are one element of the logits' type; the backward computes n itself, so it needs nothing of
// the forward. A target outside [0, V) that is not IgnoreIndex gives NaN (check targets on the
// host, where they come from). Work: Float64 [CrossEntropyWorkspace(M)].
type CrossEntropyParams struct {
	M, V          int
	IgnoreIndex   int
	Logits        *Buffer
	Targets       *Buffer
	Loss, DLoss   *Buffer
	DLogits, Work *Buffer
}

// CrossEntropyWorkspace returns the Float64 elements of work the cross-entropy needs.
func CrossEntropyWorkspace(m int) int { return max(m, 1) }

func (p *CrossEntropyParams) check(op string, backward bool) (dtype, []operand, error) {
	DT, dt, err := floatOf(op, "Logits", p.Logits)
	if err != nil {
		return 0, nil, err
	}
	if p.M < 0 || p.V < 1 || p.M*p.V < 0 {
		return 0, nil, fmt.Errorf("cuda: %s: M=%d V=%d: want M ≥ 0, V ≥ 1", op, p.M, p.V)
	}
	if p.IgnoreIndex != int(int32(p.IgnoreIndex)) {
		return 0, nil, fmt.Errorf("cuda: %s: IgnoreIndex %d does not fit int32", op, p.IgnoreIndex)
	}
	ops := []operand{{name: "Logits", b: p.Logits, dt: DT, n: p.M * p.V}, {name: "Targets", b: p.Targets, dt: Int32, n: p.M},
		{name: "Work", b: p.Work, dt: Float64, n: CrossEntropyWorkspace(p.M), atLeast: true}}
	if backward {
		ops = append(ops, operand{name: "DLoss", b: p.DLoss, dt: DT, n: 1}, operand{name: "DLogits", b: p.DLogits, dt: DT, n: p.M * p.V})
	} else {
		ops = append(ops, operand{name: "Loss", b: p.Loss, dt: DT, n: 1})
	}
	return dt, ops, nil
}

func (p *CrossEntropyParams) kernel() ceParams {
	return ceParams{logits: p.Logits.ptr, targets: p.Targets.ptr, loss: ptrOf(p.Loss), dloss: ptrOf(p.DLoss),
		dlogits: ptrOf(p.DLogits), work: p.Work.ptr, m: int64(p.M), v: int64(p.V), ignore: int32(p.IgnoreIndex)}
}

const (
	ceThreads  = 128  // FG_CE_THREADS: a block per row
	redThreads = 1024 // FG_RED_THREADS: the one block of the final reductions
)

// CrossEntropyForward computes Loss as p describes.
func CrossEntropyForward(p CrossEntropyParams) error {
	const op = "cross-entropy forward"
	dt, ops, err := p.check(op, false)
	if err != nil {
		return err
	}
	return launchOn(op, ops, func(s *state) error {
		kp := p.kernel()
		if p.M > 0 {
			if err := s.startNN("fg_ce_rows", dt, [3]int{p.M, 1, 1}, ceThreads, unsafe.Pointer(&kp)); err != nil {
				return err
			}
		}
		return s.startNN("fg_ce_loss", dt, [3]int{1, 1, 1}, redThreads, unsafe.Pointer(&kp))
	})
}

// CrossEntropyBackward computes DLogits as p describes.
func CrossEntropyBackward(p CrossEntropyParams) error {
	const op = "cross-entropy backward"
	dt, ops, err := p.check(op, true)
	if err != nil {
		return err
	}
	return launchOn(op, ops, func(s *state) error {
		if p.M == 0 {
			return nil
		}
		kp := p.kernel()
		if err := s.start("nn", "fg_ce_count", [3]int{1, 1, 1}, redThreads, 0, unsafe.Pointer(&kp)); err != nil {
			return err
		}
		return s.startNN("fg_ce_bwd", dt, [3]int{p.M, 1, 1}, ceThreads, unsafe.Pointer(&kp))
	})
}

// ---- optimizer -------------------------------------------------------------------------------

// AdamWParams describes one step of nn.AdamW on one parameter (Param, and its Grad and
// moments M, V, all of one type and length), in float64 and rounded once per stored value:
//
//	p ← p·(1 − LR·WeightDecay)          (only when Decay)
//	m ← β1·m + (1 − β1)·g
//	v ← β2·v + (1 − β2)·g²
//	p ← p − LR·(m/(1 − β1ᵗ)) / (√(v/(1 − β2ᵗ)) + Eps)
//
// where t = Step ≥ 1 is the step's number and m, v on the last line are the unrounded values.
type AdamWParams struct {
	Param, Grad, M, V *Buffer
	LR                float64
	Beta1, Beta2, Eps float64
	WeightDecay       float64
	Decay             bool
	Step              int
}

// AdamW applies the step p describes. Hyperparameters outside their domains (nn.CheckAdamW,
// nn.CheckLR) are errors.
func AdamW(p AdamWParams) error {
	const op = "adamw"
	DT, dt, err := floatOf(op, "Param", p.Param)
	if err != nil {
		return err
	}
	if err := checkAdamW(op, p.LR, p.Beta1, p.Beta2, p.Eps, p.WeightDecay, p.Step); err != nil {
		return err
	}
	n := p.Param.n
	ops := []operand{{name: "Param", b: p.Param, dt: DT, n: n}, {name: "Grad", b: p.Grad, dt: DT, n: n},
		{name: "M", b: p.M, dt: DT, n: n}, {name: "V", b: p.V, dt: DT, n: n}}
	return launchOn(op, ops, func(s *state) error {
		if n == 0 {
			return nil
		}
		// The bias corrections as nn/optim.go computes them.
		kp := adamwParams{p: p.Param.ptr, g: p.Grad.ptr, m: p.M.ptr, v: p.V.ptr, n: int64(n), lr: p.LR,
			beta1: p.Beta1, beta2: p.Beta2, eps: p.Eps,
			c1: 1 - math.Pow(p.Beta1, float64(p.Step)), c2: 1 - math.Pow(p.Beta2, float64(p.Step))}
		if p.Decay {
			kp.decay = p.LR * p.WeightDecay
		}
		return s.startNN("fg_adamw", dt, ewGrid(n), ewThreads, unsafe.Pointer(&kp))
	})
}

// checkAdamW returns an error naming the first hyperparameter outside its domain (those of
// nn.CheckAdamW and nn.CheckLR, and a step number t ≥ 1).
func checkAdamW(op string, lr, beta1, beta2, eps, weightDecay float64, step int) error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case step < 1:
		return fmt.Errorf("cuda: %s: Step=%d, want ≥ 1", op, step)
	case !(lr >= 0) || !finite(lr):
		return fmt.Errorf("cuda: %s: LR=%g, want finite and ≥ 0", op, lr)
	case !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1):
		return fmt.Errorf("cuda: %s: Beta1=%g Beta2=%g, want each in [0, 1)", op, beta1, beta2)
	case !(eps > 0) || !finite(eps):
		return fmt.Errorf("cuda: %s: Eps=%g, want positive and finite", op, eps)
	case !(weightDecay >= 0) || !finite(weightDecay):
		return fmt.Errorf("cuda: %s: WeightDecay=%g, want finite and ≥ 0", op, weightDecay)
	}
	return nil
}

// ---- clip by global norm ---------------------------------------------------------------------

// sumsqBlocks is the fixed number of blocks (and partial sums) of the sum of squares over n
// elements.
func sumsqBlocks(n int) int {
	if n == 0 {
		return 0
	}
	return min(ceilDiv(n, ewThreads*8), 256)
}

// GradNormWorkspace returns the Float64 elements of work GradNorm needs for grads.
func GradNormWorkspace(grads ...*Buffer) int {
	n := 0
	for _, g := range grads {
		n += sumsqBlocks(g.Len())
	}
	return max(n, 1)
}

// GradNorm computes the global norm of the gradients, as nn.ClipGradNorm does,
//
//	norm[0] = √(Σ_i Σ_j grads_i[j]²)     (in float64; norm is Float64 [1])
//
// deterministically: each buffer's squares are summed by a fixed grid of blocks into work
// (Float64 [GradNormWorkspace(grads...)]) and the partial sums are added in order. The
// gradients may be Float32 or Float64, each its own.
func GradNorm(norm, work *Buffer, grads ...*Buffer) error {
	const op = "gradient norm"
	gs, dts, err := gradOperands(op, grads)
	if err != nil {
		return err
	}
	ops := append([]operand{{name: "norm", b: norm, dt: Float64, n: 1}, {name: "work", b: work, dt: Float64, n: GradNormWorkspace(grads...), atLeast: true}}, gs...)
	return launchOn(op, ops, func(s *state) error {
		off := int64(0)
		for i, g := range grads {
			nb := sumsqBlocks(g.n)
			if nb == 0 {
				continue
			}
			kp := sumsqParams{x: g.ptr, work: work.ptr + devptr(off*8), n: int64(g.n)}
			if err := s.startNN("fg_sumsq_partial", dts[i], [3]int{nb, 1, 1}, ewThreads, unsafe.Pointer(&kp)); err != nil {
				return err
			}
			off += int64(nb)
		}
		kp := sumsqParams{work: work.ptr, out: norm.ptr, nwork: off}
		return s.start("nn", "fg_sumsq_final", [3]int{1, 1, 1}, redThreads, 0, unsafe.Pointer(&kp))
	})
}

// gradOperands checks that every gradient is a Float32 or Float64 buffer and returns them as
// operands ("grads[i]"), with their element types.
func gradOperands(op string, grads []*Buffer) ([]operand, []dtype, error) {
	ops := make([]operand, len(grads))
	dts := make([]dtype, len(grads))
	for i, g := range grads {
		name := fmt.Sprintf("grads[%d]", i)
		DT, dt, err := floatOf(op, name, g)
		if err != nil {
			return nil, nil, err
		}
		ops[i], dts[i] = operand{name: name, b: g, dt: DT, n: g.n}, dt
	}
	return ops, dts, nil
}

// ClipByNorm scales the gradients in place when their global norm (norm[0], from GradNorm)
// exceeds maxNorm, as nn.ClipGradNorm does: g ← g·(maxNorm/norm) when maxNorm > 0 and
// maxNorm < norm < +Inf, else nothing changes. The test runs on the device, so the host need
// not read the norm.
func ClipByNorm(norm *Buffer, maxNorm float64, grads ...*Buffer) error {
	const op = "clip by norm"
	if math.IsNaN(maxNorm) {
		return fmt.Errorf("cuda: %s: maxNorm is NaN", op)
	}
	gs, dts, err := gradOperands(op, grads)
	if err != nil {
		return err
	}
	ops := append([]operand{{name: "norm", b: norm, dt: Float64, n: 1}}, gs...)
	return launchOn(op, ops, func(s *state) error {
		if !(maxNorm > 0) {
			return nil
		}
		for i, g := range grads {
			if g.n == 0 {
				continue
			}
			kp := ewParams{b: norm.ptr, y: g.ptr, n: int64(g.n), alpha: maxNorm}
			if err := s.startNN("fg_clip", dts[i], ewGrid(g.n), ewThreads, unsafe.Pointer(&kp)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ---- dropout ---------------------------------------------------------------------------------

// DropoutParams describes dropout with probability P ∈ [0, 1) over n elements, with the mask
// drawn from the counter-based generator of DropoutKeep (Philox-4x32-10 keyed by Seed, element
// i at counter Offset + i/4):
//
//	mask[i] = 1/(1 − P) (rounded to the element type) when DropoutKeep(Seed, Offset, i, P), else 0
//	Y = X∘mask,  or Y = mask when X is nil (nn's mask input)
//
// The backward is the same call on the gradients (DX = DY∘mask) with the same Seed and Offset.
// A fresh mask for the next n elements starts at Offset + DropoutCounters(n).
type DropoutParams struct {
	P            float64
	Seed, Offset uint64
	X, Y         *Buffer
}

// Dropout applies the mask p describes.
func Dropout(p DropoutParams) error {
	const op = "dropout"
	DT, dt, err := floatOf(op, "Y", p.Y)
	if err != nil {
		return err
	}
	if !(p.P >= 0 && p.P < 1) {
		return fmt.Errorf("cuda: %s: P=%g is outside [0, 1)", op, p.P)
	}
	n := p.Y.n
	ops := []operand{{name: "Y", b: p.Y, dt: DT, n: n}, {name: "X", b: p.X, dt: DT, n: n, optional: true}}
	return launchOn(op, ops, func(s *state) error {
		if n == 0 {
			return nil
		}
		kp := ewParams{a: ptrOf(p.X), y: p.Y.ptr, n: int64(n), alpha: p.P, seed: p.Seed, offset: p.Offset}
		return s.startNN("fg_dropout", dt, ewGrid(n), ewThreads, unsafe.Pointer(&kp))
	})
}

// ---- softmax family on Buffers -------------------------------------------------------------

// SoftmaxBuffers is SoftmaxParams on device Buffers: the same kinds, shapes ([Outer, N, Inner]
// reduced over N), formulas and edge cases, with X, Y, DY, DX all Float32 or all Float64.
type SoftmaxBuffers struct {
	Kind            SoftmaxKind
	Outer, N, Inner int
	X, Y            *Buffer
	DY, DX          *Buffer // backward only
}

// SoftmaxForwardBuffers computes Y from X (see SoftmaxParams), without waiting.
func SoftmaxForwardBuffers(p SoftmaxBuffers) error { return p.run(false) }

// SoftmaxBackwardBuffers computes DX from Y, DY (and X for LogSumExp), without waiting.
func SoftmaxBackwardBuffers(p SoftmaxBuffers) error { return p.run(true) }

func (p SoftmaxBuffers) run(backward bool) error {
	op := p.Kind.String() + " forward"
	if backward {
		op = p.Kind.String() + " backward"
	}
	if p.Kind < Softmax || p.Kind > LogSumExp {
		return fmt.Errorf("cuda: softmax: unknown kind %d", int32(p.Kind))
	}
	if p.Outer < 0 || p.N < 0 || p.Inner < 0 {
		return fmt.Errorf("cuda: %s: negative size in [Outer, N, Inner] = [%d, %d, %d]", op, p.Outer, p.N, p.Inner)
	}
	size, err := mulSizes(p.Outer, p.N, p.Inner)
	if err != nil {
		return fmt.Errorf("cuda: %s: [Outer, N, Inner] = [%d, %d, %d]: %v", op, p.Outer, p.N, p.Inner, err)
	}
	ySize := size
	if p.Kind == LogSumExp {
		ySize = p.Outer * p.Inner
	}
	first := p.Y
	if !backward || p.Kind == LogSumExp {
		first = p.X
	}
	DT, dt, err := floatOf(op, "X or Y", first)
	if err != nil {
		return err
	}
	ops := []operand{{name: "Y", b: p.Y, dt: DT, n: ySize}}
	if !backward || p.Kind == LogSumExp {
		ops = append(ops, operand{name: "X", b: p.X, dt: DT, n: size})
	}
	if backward {
		ops = append(ops, operand{name: "DY", b: p.DY, dt: DT, n: ySize}, operand{name: "DX", b: p.DX, dt: DT, n: size})
	}
	return launchOn(op, ops, func(s *state) error {
		if p.Outer*p.Inner == 0 {
			return nil
		}
		kp := softmaxParams{x: ptrOf(p.X), y: p.Y.ptr, outer: int64(p.Outer), n: int64(p.N), inner: int64(p.Inner), kind: int32(p.Kind)}
		if backward {
			kp.dy, kp.dx = p.DY.ptr, p.DX.ptr
			if p.Kind != LogSumExp {
				kp.x = 0
			}
		}
		return s.softmaxKernel(&kp, dt, backward)
	})
}
