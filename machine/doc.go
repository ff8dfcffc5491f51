// Package machine runs Gorgonia expression graphs, the forward and the
// symbolic backward that gorgonia.Grad adds, with every value's memory
// planned once. It implements gorgonia.VM; nn.Runner trains on it, and
// Gorgonia's TapeMachine stays the independent reference in the tests.
//
// # Plan
//
// New sorts the graph once (gorgonia.Sort), checks every node (element
// type, shape with elements, statement ops refused) and gives each node a
// place:
//
//   - an input (parameters, tokens, targets, dropout masks) is read from the
//     value bound to it at every RunAll, so callers update inputs in place
//     or rebind them as with the TapeMachine;
//   - a constant is evaluated once;
//   - a view (Gorgonia's reshape of a computed tensor, an op implementing
//     Viewer such as attention's pieces of a packed value) is its input's
//     buffer at an offset and costs nothing at run time;
//   - every other op node gets a buffer from a pool keyed by dtype and
//     size. The buffer is taken before the node runs and given back after
//     the last step reading it or any view of it, so an op never writes
//     into one of its inputs, and the buffers of kept nodes (roots, and
//     the nodes passed to Keep: loss, logits, gradients) are never given
//     back.
//
// No op runs in place (the machine never calls UnsafeDo), so Gorgonia's
// missing alias analysis (an in-place op overwriting a buffer that a live
// view shares, see ops/attention's README) cannot bite: a buffer is reused
// only when nothing that shares it is read again.
//
// # Run
//
// RunAll runs the op nodes in order. Each writes into its planned buffer:
// through IntoDoer (every op made with graph.NewOp: nn's, ops/softmax's,
// ops/attention's), gorgonia.UsePreallocDoer (Gorgonia's arithmetic), or, for an op with neither or a
// scalar result, its Do followed by a copy; Report.Copied lists those nodes
// (for a GPT: Gorgonia's scalar sum, negation, size and reshape of the
// loss, none of ours). A run allocates nothing in the machine itself; the
// ops' own scratch (attention's transposed tiles, parallel.For's closures)
// remains. Value and Read give the kept nodes' values after a run; on the
// CPU they are also bound to their nodes, so n.Value() works.
//
// # Backends
//
// A Backend is a device: buffers (Alloc), host access (Host when its memory
// is host memory, else Upload and Download), and a Registry of kernels by
// op kind (OpKind: an op's Go type, or its own OpKind as nn's ops give). At
// planning the machine binds each op node to the device kernel its kind has
// (KernelMaker sees the node's operands once, to check them and precompute
// launch parameters); a node whose kind has none runs its Gorgonia op on
// the host: on the CPU backend that is the normal path and costs nothing,
// on a device the machine downloads the inputs into host copies planned
// once, runs the op and uploads the result, and lists the node in
// Report.HostOps. Open chooses the backend, reading FLASHGORGON_DEVICE (the
// only place the machine does): the GPU when package cuda has one and cuBLAS
// loads, else the CPU; seam_test.go runs the GPT on a fake device whose
// memory the host cannot see, to hold the seam to what a device needs.
//
// # CUDA
//
// The CUDA backend (CUDA, cuda.go) keeps every value in cuda Buffers
// (integers as int32) and binds, in cuda_kernels.go, a kernel to each op
// kind of a GPT's training graph: nn's affine, column sums, GELU, matrix
// products (cuBLAS), norms (the gradient reading its forward's row
// statistics), heads split and merge, gather and scatter-add, and nn's two
// fused ops (cuda_fused.go: the linear layer with its bias added in the
// product's epilogue on cuBLASLt, the cross-entropy with its log-softmax), so
// that a Runner builds the same fused graph on the GPU as on the CPU; ops/softmax's
// family; ops/attention's forward and backward on views of the packed values
// (cuda.AttentionForwardBuffers) and the packing of its gradient; and
// Gorgonia's own ops: elementwise arithmetic and functions (+ − ⊙ ÷ ^ with
// same-size or scalar operands; tanh, sigmoid, exp, ln, sqrt, … through
// cuda.Unary and cuda.Binary), matrix × matrix, × vector and batched products
// (cuBLAS), sums over leading axes (deterministic, in float64) or trailing
// ones, SizeOf, scalar reshape, and data movement (repeat, transpose, slice,
// concat and sliceIncr as strided copies, cuda.Strided, whose layouts the
// machine derives by running the op once on the host over inputs that hold
// their own positions: layout.go). The ops learn their parameters from the
// op's description, graph.DefOf (NNSpecer for nn's, DeviceSpec methods for
// softmax and attention).
// TestCUDAHostOps lists the ops without a kernel in a GPT's graph and in
// graphs of Gorgonia's general-purpose ops: none. Kernels queue
// on the device's one stream; a run waits for the device only where the host
// reads a value (Value, Read, a host op's inputs).
//
// Profile (cuda_profile.go) times each op node of a run on the device with
// CUDA events, the kernels queued back to back behind a long product:
// nn's BenchmarkCUDAStepProfile prints where a training step's time goes.
//
// TrainStep runs a training step (the graph, the gradient norm, the clip and
// AdamW) as one program: on CUDA in one cuda.Do (one hand-off to the cuda
// worker's thread per step), recorded at the second step as a CUDA graph
// (cuda.Capture) and replayed with one launch per step after it. The values
// that change between steps are in device memory written before the launch:
// the inputs' buffers, and AdamW's learning rate and bias corrections
// (cuda.ParamGroup.AdamWScheduled). A recording failure logs once and the
// steps launch their kernels one by one.
//
// Resident inputs (Resident: a model's parameters, constant positions) are
// uploaded at the first run and kept; an OptimizerBackend (the CUDA one,
// over cuda.ParamGroup) steps them in place with AdamW moments of its own
// (NewAdamW), so that a training step moves only its batch in and the loss
// and gradient norm out. Reload and SyncToHost move them when the host
// changes or reads them (nn.Runner does both itself).
package machine
