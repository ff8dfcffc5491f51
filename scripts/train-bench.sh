#!/usr/bin/env bash
# train-bench.sh: examples/gpt's training throughput beside PyTorch eager's (cmd/trainbench/gpt_twin.py,
# the same architecture, sizes, optimizer and float32), side by side in one run on one machine: on
# the CPU at each thread count (GOMAXPROCS / torch.set_num_threads) and, where there is a GPU, on it.
#
#   scripts/train-bench.sh GPT_BINARY CORPUS [THREADS]      # THREADS default "2,16"
#
# ROUNDS (default 1) repeats each CPU row that many times, ours and PyTorch alternating (ours,
# PyTorch, ours, PyTorch, …), and reports each side's median tokens/s and the ratio of the
# medians: on a shared VM one reading of a 12-step run moves by ±15% (cmd/trainbench/results).
#
# GPT_BINARY is `go build -o … ./examples/gpt` (the GPU machine has no Go: build it elsewhere);
# CORPUS a text file for -data. Both sides are timed the same way: the steps after a warm-up
# step (ours: steady_tokens_per_s of the result line, the first step, the evaluation and the
# checkpoint excluded; PyTorch: every step after one warm-up step). On a GPU, PyTorch compiled
# (torch.compile, modes default and reduce-overhead) is timed too. Ours over the whole run (graph
# planning, first step, one evaluation batch, checkpoint) is printed beside it. Two
# configurations: examples/gpt's earlier default (2 layers, width 64, 4 heads, context 64,
# batch 32) and a larger one (4 layers, width 256, 8 heads, context 256, batch 16).
set -uo pipefail
cd "$(dirname "$0")/.."
gpt=$1 corpus=$2 threads=${3:-2,16}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=("2 64 4 64 32 60" "4 256 8 256 16 12")
have_torch=0
python3 -c 'import torch' 2>/dev/null && have_torch=1
gpu=0
[ $have_torch = 1 ] && python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && gpu=1

ours() { # env... -- layers width heads ctx batch steps
  local L=$1 W=$2 H=$3 C=$4 B=$5 S=$6
  "$gpt" -data "$corpus" -layers "$L" -width "$W" -heads "$H" -context "$C" -batch "$B" -steps "$S" \
    -lr 1e-3 -min_lr 1e-4 -warmup 0 -eval_every 1000000 -eval_batches 1 -sample_len 1 -quiet -out "$tmp/out" 2>&1 |
    sed -n 's/.* tokens_per_s=\([0-9.]*\) steady_tokens_per_s=\([0-9.]*\).*/\2 \1/p'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
torch() { # device threads layers width heads ctx batch steps [compile mode]
  python3 cmd/trainbench/gpt_twin.py --device "$1" --threads "$2" --layers "$3" --width "$4" --heads "$5" \
    --context "$6" --batch "$7" --steps "$8" ${9:+--compile "$9"} 2>>"$tmp/torch.err" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["tokens_per_s"]))'
}

echo "# train-bench $(date -u '+%Y-%m-%d %H:%M UTC'): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs"
[ $gpu = 1 ] && echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo
echo "| config (layers, width, heads, context, batch) | device | ours tokens/s | ours, whole run | PyTorch eager tokens/s | ours ÷ PyTorch |"
echo "|---|---|---|---|---|---|"
compiled=()
for cfg in "${configs[@]}"; do
  set -- $cfg
  for t in ${threads//,/ }; do
    os=() ws=() ps=()
    for _ in $(seq "${ROUNDS:-1}"); do
      read -r o w < <(GOMAXPROCS=$t FLASHGORGON_DEVICE=cpu ours "$@")
      os+=("$o") ws+=("$w")
      [ $have_torch = 1 ] && ps+=("$(torch cpu "$t" "$@")")
    done
    o=$(median "${os[@]}") w=$(median "${ws[@]}") p=-
    [ ${#ps[@]} -gt 0 ] && p=$(median "${ps[@]}")
    r=$(python3 -c "print(f'{$o/$p:.2f}')" 2>/dev/null || echo -)
    all=""
    [ "${ROUNDS:-1}" -gt 1 ] && all=" (ours ${os[*]}; PyTorch ${ps[*]:-–})"
    echo "| $1, $2, $3, $4, $5 | CPU, $t threads | $o | $w | $p | $r$all |"
  done
  if [ $gpu = 1 ]; then
    read -r o w < <(ours "$@")
    p=$(torch cuda 0 "$@")
    r=$(python3 -c "print(f'{$o/$p:.2f}')" 2>/dev/null || echo -)
    echo "| $1, $2, $3, $4, $5 | GPU | $o | $w | $p | $r |"
    for mode in default reduce-overhead; do
      c=$(torch cuda 0 "$@" "$mode" || echo -)
      rc=$(python3 -c "print(f'{$o/$c:.2f}')" 2>/dev/null || echo -)
      compiled+=("| $1, $2, $3, $4, $5 | $mode | $o | $c | $rc |")
    done
  fi
done
if [ ${#compiled[@]} -gt 0 ]; then
  echo
  echo "GPU against torch.compile (mode; the optimizer step eager):"
  echo
  echo "| config (layers, width, heads, context, batch) | torch.compile mode | ours tokens/s | PyTorch compiled tokens/s | ours ÷ PyTorch |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${compiled[@]}"
fi
if [ -s "$tmp/torch.err" ]; then
  echo
  echo "PyTorch's standard error (last lines):"
  tail -n 15 "$tmp/torch.err" | sed 's/^/    /'
fi
