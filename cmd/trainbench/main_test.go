package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestRun trains a tiny GPT for two steps and checks the JSON line: the
// sizes as given, a positive rate, and the parameter count against its
// closed form for nn's GPT with LayerNorm and an MLP of 4·W (embeddings
// V·W and C·W, a head W·V without bias; per block the fused q,k,v
// projection W·3W + 3W, the output projection W·W + W, the MLP W·4W + 4W
// and 4W·W + W, two LayerNorms 2·2W; the final LayerNorm 2W).
func TestRun(t *testing.T) {
	const L, W, H, C, B, V = 2, 16, 2, 8, 3, 11
	var out bytes.Buffer
	args := []string{"-layers", "2", "-width", "16", "-heads", "2", "-context", "8", "-batch", "3", "-vocab", "11", "-steps", "2", "-threads", "1"}
	if err := run(args, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Params, Steps, Threads, Batch, Context int
		TokensPerS                             float64 `json:"tokens_per_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in %q", err, out.String())
	}
	block := W*3*W + 3*W + W*W + W + W*4*W + 4*W + 4*W*W + W + 4*W
	want := V*W + C*W + W*V + L*block + 2*W
	if got.Params != want || got.Steps != 2 || got.Threads != 1 || got.Batch != B || got.Context != C || !(got.TokensPerS > 0) {
		t.Fatalf("got %+v, want %d parameters, 2 steps, 1 thread, batch %d, context %d, a positive rate", got, want, B, C)
	}
}

// TestBadFlags: sizes out of range are an error naming them.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-steps", "0"}, {"-batch", "-1"}, {"-threads", "-2"}} {
		err := run(args, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: error %v, want one naming %s", args, err, args[0])
		}
	}
}
