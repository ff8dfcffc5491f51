#!/usr/bin/env bash
# cpu-bench.sh: the CPU speed table of issue 9 in one command, side by side in one run on one
# machine: the machine's float32 FMA peak and streaming bandwidth (shared/tools/peak.c), our
# fused attention and softmax (cmd/cpubench) and, where Python has PyTorch, PyTorch's CPU SDPA
# (FLASH and MATH backends) at the same thread counts.
#
#   scripts/cpu-bench.sh [THREADS]            # THREADS default "2"; e.g. "2,16"
#
# Environment: CPUBENCH names a prebuilt cpubench binary (the GPU machine has no Go: build it
# elsewhere with `go build -o .devbin/cpubench ./cmd/cpubench`); PEAK_SRC the peak.c to use
# (default ../shared/tools/peak.c); OUT the folder for the log (default out/cpu-bench); SHAPES,
# when set, replaces BenchmarkAttention's five shapes (cpubench -shapes: "B,H,N,d,causal;…", e.g.
# examples/gpt's "32,8,64,32,1;32,4,64,16,1;16,8,256,32,1"); REPS, when set, the timed runs of
# each case whose median is reported (cpubench -reps, passed on to PyTorch too; default 3: on a
# shared 2-vCPU machine single calls of 5-10 ms vary by ±10 points of the peak, so the N = 1024
# rows read steadier with REPS=15 or more); PIN=0 runs unpinned (below).
#
# Pinning: for each thread count T the script runs peak.c, cpubench (and with it cpubench's FMA
# peak and the PyTorch process it starts, which inherits the mask) under `taskset -c CPUS`, the
# same T CPUs for every peer of the comparison. CPUS are T distinct physical cores, read from
# /sys/devices/system/cpu/cpu*/topology/thread_siblings_list (one CPU per sibling group, the
# group of CPU 0 left out while enough others remain, within the CPUs this process may use);
# when T is more than the cores, their siblings follow; T at or above the allowed CPUs takes them
# all. Unpinned, two threads on a 16-CPU VM may share a core in one run and not in the next, or
# wander from core to core between loops (losing their L1 and L2 contents) where PyTorch's
# spinning OpenMP threads stay put: pinned, both sides run on the same cores, and the log names
# them with the topology they were chosen from. Without taskset (or with PIN=0) everything runs
# unpinned and the log says so. A VM's topology is the guest's view: two vCPUs it calls cores
# may still be one host core's hyperthreads; the log's peak.c at 1 thread on the first chosen
# CPU beside peak.c at T threads shows that (T times the 1-thread figure expected).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
out=${OUT:-out/cpu-bench}
mkdir -p "$out"
log="$out/cpu-bench.log"
: >"$log"

# expand prints the CPUs of a list such as "0-3,8" one per line.
expand() {
  local part
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}

# sys is the kernel's CPU folder (SYSFS_CPU replaces it, for testing the choice below on a made-up
# topology); allowed: the CPUs this process may run on (its affinity), else every online CPU.
sys=${SYSFS_CPU:-/sys/devices/system/cpu}
allowed=$(grep -s '^Cpus_allowed_list:' /proc/self/status | awk '{print $2}' || true)
[ -n "$allowed" ] || allowed=$(cat $sys/online 2>/dev/null || echo 0)
mapfile -t cpus < <(expand "$allowed" | sort -n)

# pick T prints T CPUs for T threads as a taskset list (see the header): one per physical core
# first (siblings as /sys names them; a CPU without topology counts as its own core), CPU 0's
# core last, then the cores' other siblings.
pick() {
  local t=$1 c sib first=() rest=() zero=() seen=" "
  if ((t >= ${#cpus[@]})); then
    local IFS=,; echo "${cpus[*]}"; return
  fi
  for c in "${cpus[@]}"; do
    sib=$(cat "$sys/cpu$c/topology/thread_siblings_list" 2>/dev/null || echo "$c")
    if [[ $seen == *" $sib "* ]]; then
      rest+=("$c")
    elif [[ ",$sib," == *",0,"* || $sib == 0-* ]]; then
      seen+="$sib "; zero+=("$c")
    else
      seen+="$sib "; first+=("$c")
    fi
  done
  local all=("${first[@]}" "${zero[@]}" "${rest[@]}")
  local IFS=,; echo "${all[*]:0:t}"
}

pin=0
if [ "${PIN:-1}" != 0 ] && command -v taskset >/dev/null; then
  pin=1
fi
{
  echo "## CPU topology (the pinned CPUs are chosen from it)"
  echo "allowed CPUs: $allowed"
  for c in "${cpus[@]}"; do
    d=$sys/cpu$c/topology
    echo "cpu$c: package $(cat $d/physical_package_id 2>/dev/null || echo ?), core $(cat $d/core_id 2>/dev/null || echo ?), siblings $(cat $d/thread_siblings_list 2>/dev/null || echo ?)"
  done
  if ((pin)); then
    echo "pinning: taskset -c, the same CPUs for peak.c, cpubench and PyTorch at each thread count"
  elif [ "${PIN:-1}" = 0 ]; then
    echo "pinning: off (PIN=0): every run unpinned"
  else
    echo "pinning: off (no taskset): every run unpinned"
  fi
  echo
} >>"$log"

# on CPUS CMD… runs CMD pinned to CPUS (unpinned when pinning is off).
on() {
  local set=$1; shift
  if ((pin)); then taskset -c "$set" "$@"; else "$@"; fi
}

peak_src=${PEAK_SRC:-../shared/tools/peak.c}
peak=
if command -v gcc >/dev/null && [ -f "$peak_src" ]; then
  gcc -O2 -mavx2 -mfma -o "$out/peak" "$peak_src" -lpthread
  peak="$out/peak"
else
  echo "(no gcc or no $peak_src: FMA peak and bandwidth not measured)" >>"$log"
fi

bin=${CPUBENCH:-}
if [ -z "$bin" ]; then
  bin="$out/cpubench"
  go build -o "$bin" ./cmd/cpubench
fi
torch=()
if python3 -c 'import torch' 2>/dev/null; then
  torch=(-torch cmd/cpubench/sdpa_cpu.py)
else
  echo "(python3 has no torch: PyTorch columns empty)" >>"$log"
fi
shapes=()
if [ -n "${SHAPES:-}" ]; then
  shapes=(-shapes "$SHAPES")
fi
reps=()
if [ -n "${REPS:-}" ]; then
  reps=(-reps "$REPS")
fi
for t in ${threads//,/ }; do
  set=$(pick "$t")
  if ((pin)); then
    echo "## $t threads on CPUs $set" >>"$log"
  else
    echo "## $t threads, unpinned" >>"$log"
  fi
  if [ -n "$peak" ]; then
    if ((pin && t > 1)); then
      echo "peak.c at 1 thread on CPU ${set%%,*}:" >>"$log"
      on "${set%%,*}" "$peak" 1 >>"$log" 2>&1 || echo "peak failed" >>"$log"
    fi
    echo "peak.c at $t threads:" >>"$log"
    on "$set" "$peak" "$t" >>"$log" 2>&1 || echo "peak failed" >>"$log"
    echo >>"$log"
  fi
  on "$set" env FLASHGORGON_DEVICE=cpu "$bin" -threads "$t" "${torch[@]}" "${shapes[@]}" "${reps[@]}" >>"$log" 2>&1
  echo >>"$log"
done
cat "$log"
