#!/usr/bin/env bash
# gpt-cpu-vs-gpu.sh: trains examples/gpt from one binary (CGO_ENABLED=0 go build ./examples/gpt;
# every build has the CUDA backend) three times at once on the GPU machine and compares the
# loss curves:
#   gpu        attention and softmax kernels on the GPU (the default when a device is found)
#   cpu        the same seed with FLASHGORGON_DEVICE=cpu (the CPU ops)
#   cpu_seed2  the CPU ops with another seed: the run-to-run noise the GPU run is judged against
# The GPU run matches when its validation losses differ from the CPU run's by no more than the
# seeds do (max over the evaluation points) plus 0.02 nats.
#
# Usage: gpt-cpu-vs-gpu.sh GPT_BINARY CORPUS OUTDIR [more gpt flags]
# Writes OUTDIR/{gpu,cpu,cpu_seed2}/ (the runs' outputs), OUTDIR/gpt_*.log and OUTDIR/compare.txt,
# and exits 1 when the curves do not match.
set -uo pipefail
bin=$1 data=$2 out=$3
shift 3
mkdir -p "$out"
common=(-data "$data" -time 0 -quiet -sample_len 200 "$@")
procs=$(( $(nproc) / 3 > 0 ? $(nproc) / 3 : 1 ))
GOMAXPROCS=$procs "$bin" "${common[@]}" -out "$out/gpu" >"$out/gpt_gpu.log" 2>&1 &
GOMAXPROCS=$procs FLASHGORGON_DEVICE=cpu "$bin" "${common[@]}" -out "$out/cpu" >"$out/gpt_cpu.log" 2>&1 &
GOMAXPROCS=$procs FLASHGORGON_DEVICE=cpu "$bin" "${common[@]}" -seed 2 -out "$out/cpu_seed2" >"$out/gpt_cpu_seed2.log" 2>&1 &
fail=0
for job in $(jobs -p); do wait "$job" || fail=1; done
[ $fail = 0 ] || echo "a training run failed: see $out/gpt_*.log"
# The comparison means something only if the gpu run really ran its ops on a GPU.
if ! grep -q 'flashgorgon: ops run on cuda' "$out/gpt_gpu.log"; then
  echo "the gpu run did not run on a CUDA device:"; grep flashgorgon "$out/gpt_gpu.log"
  fail=1
fi

python3 - "$out" <<'PY' | tee "$out/compare.txt"
import csv, sys
out = sys.argv[1]
def load(run):
    train, val = [], {}
    with open(f"{out}/{run}/loss.csv") as f:
        for row in csv.DictReader(f):
            train.append(float(row["train_loss"]))
            if row["val_loss"]:
                val[int(row["step"])] = float(row["val_loss"])
    return train, val
runs = {r: load(r) for r in ("gpu", "cpu", "cpu_seed2")}
for r in runs:
    log = open(f"{out}/gpt_{r}.log").read()
    res = [l for l in log.splitlines() if l.startswith("result:")]
    dev = [l for l in log.splitlines() if "cuda" in l.lower() or "device" in l.lower()]
    print(f"{r:10s} {res[0] if res else 'no result line'}")
    for l in dev[:2]:
        print(f"{'':10s} {l}")
steps = sorted(runs["cpu"][1])
print()
print(f"{'step':>6} {'val cpu':>9} {'val gpu':>9} {'|gpu-cpu|':>10} {'val seed2':>10} {'|seed2-cpu|':>12}")
worst_gpu = worst_seed = 0.0
for s in steps:
    c, g, n = runs["cpu"][1][s], runs["gpu"][1].get(s, float("nan")), runs["cpu_seed2"][1].get(s, float("nan"))
    worst_gpu, worst_seed = max(worst_gpu, abs(g - c)), max(worst_seed, abs(n - c))
    print(f"{s:6d} {c:9.4f} {g:9.4f} {abs(g-c):10.4f} {n:10.4f} {abs(n-c):12.4f}")
def tail_mean(x, k=100): return sum(x[-k:]) / len(x[-k:])
print()
print("mean train loss, last 100 steps: " + ", ".join(f"{r} {tail_mean(runs[r][0]):.4f}" for r in runs))
ok = worst_gpu == worst_gpu and worst_gpu <= worst_seed + 0.02
print(f"max |val gpu - val cpu| = {worst_gpu:.4f}; max |val seed2 - val cpu| = {worst_seed:.4f}; "
      f"{'MATCH' if ok else 'MISMATCH'} (bound: seed noise + 0.02)")
sys.exit(0 if ok else 1)
PY
status=${PIPESTATUS[0]}
[ $fail = 0 ] && [ "$status" = 0 ]
