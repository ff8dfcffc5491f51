// Package nn holds the layers, loss, optimizer, checkpoints and the GPT
// model built on Gorgonia and flashgorgon's ops.
//
// Layers work on activations of shape [M, Width] (M = B·N rows, row b·N + l
// for token l of sequence b); only attention moves to [B, H, N, d].
// Each layer exists as a function of nodes (LinearNode, LayerNormNode,
// RMSNormNode, GELU, EmbedNode, MatMul, CrossEntropy) and as a module that
// owns its parameters (Linear, Norm, Embedding, MultiHeadAttention, Block,
// GPT). A module's Forward takes a Scope: one graph under construction, which
// binds a node to each parameter. Several scopes (a training graph, an
// evaluation graph of another batch size) share one set of parameter tensors.
//
// The ops nn defines (matrix product, bias and gain, normalization, GELU,
// gather/scatter-add, head split/merge) implement gorgonia.Op, SDOp and
// ADOp; each input's gradient is an op of its own (op.go). Softmax and
// attention come from ops/softmax and ops/attention. Two fused ops, a
// linear layer with its bias (linearOp) and the cross-entropy (xentOp), are
// built only where the machine that runs the graph runs them on its device
// (a Runner's scope asks machine.Native; the CPU does): elsewhere the same
// layers are built from the ops above.
//
// Training:
//
//	m, err := nn.NewGPT(cfg, tensor.Float32, rng)
//	r, err := m.NewRunner(batch, seq, nn.Train)      // graph built and compiled once
//	opt, err := nn.NewAdamW(r.Params(), 0.9, 0.95, 1e-8, 0.1)
//	sched := nn.CosineSchedule{Peak: 3e-3, Min: 3e-4, Warmup: 50, Total: steps}
//	err = sched.Validate()
//	for s := 0; s < steps; s++ {
//		loss, norm, err := r.TrainStep(opt, sched.LR(s), 1.0, tokens, targets, rng)
//		…
//	}
//	js, err := cfg.EncodeJSON()
//	err = nn.SaveCheckpoint(path, m.Params(), opt, steps, map[string]string{"config": js})
//
// Every error matters: bad arguments (NaN or ±Inf hyperparameters, nil
// random sources, sizes that overflow) are errors, never panics, and a
// refused step or save changes nothing. Checkpoints are safetensors files;
// checkpoint.go lists the tensor and metadata names and the rules of saving
// and restoring, gpt.go the parameter names and shapes. Runners of one model
// may run on different goroutines (see Runner).
package nn
