#!/usr/bin/env bash
# Xeon A/B of internal/parallel's spin (FLASHGORGON_SPIN) on the large GPT's CPU training step
# (branch cpustep, fifth session of 2026-11-23). About 70-85 s of run time on the H100 machine's
# 16-vCPU Xeon (46 s for the benchmarks on the 2-core development machine); every command has a
# timeout.
#
# Binaries (built here, no cgo; D=/work/main/.devbin/s5x after merging branch cpustep):
#   CGO_ENABLED=0 go test -c -ldflags='-s -w' -o $D/nn.test ./nn
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o $D/trainbench ./cmd/trainbench
#   optional, main before the merge (602afb5) as a baseline: $D/nn-base.test, built the same way
#   xz -T2 -6 $D/*.test $D/trainbench; cp cmd/trainbench/results/cpustep-xeon-plan.sh $D/run.sh
# Device call: carry [".devbin/s5x"], command `bash .devbin/s5x/run.sh`, timeout_s 180.
#
# What it runs (logs in $OUT/logs.tgz, the summary also on stdout):
#   1. nn's BenchmarkTrainStep/L4_D256_H8_T256_B16 (vocab 96), one process per thread count (2,
#      16) and FLASHGORGON_SPIN = 0 (park at once), 50us (main's old fixed spin) and 5ms (the new
#      default), and nn-base.test when present, interleaved over two rounds: tokens/s and, for
#      each process, the vCPUs' steal and idle ticks from /proc/stat (the VM's host taking our
#      vCPUs; cores left idle, polling counting as busy).
#   2. the small config's step (L2_D64_H4_T64_B32) at 2 and 16 threads, one run per variant.
#   3. trainbench at 16 threads with the default spin and -cpuprofile over 6 timed steps: where the
#      16-thread step goes now (`go tool pprof -top train-large-16.prof`, no binary needed).
#   4. PyTorch's twin (gpt_twin.py, vocab 128, same model) at 2 and 16 threads, 4 timed steps,
#      when python3 has torch: the ratio in the same call.
set -u
D=${D:-.devbin/s5x}
L=$OUT/logs
mkdir -p "$L"
for f in nn.test nn-base.test trainbench; do
	[ -f "$D/$f.xz" ] && xz -d -f -T4 "$D/$f.xz"
	[ -f "$D/$f" ] && chmod +x "$D/$f"
done
VARIANTS="spin0 spin50us spin5ms"
[ -x "$D/nn-base.test" ] && VARIANTS="base $VARIANTS"
export FLASHGORGON_DEVICE=cpu
{ date -u; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|Hypervisor'; uptime; } >"$L/machine.txt"

# cpu_ticks prints the machine's steal and idle ticks (USER_HZ) from /proc/stat's cpu line.
cpu_ticks() { awk '/^cpu /{print $9, $5}' /proc/stat; }

T0=$(date +%s)
for round in 1 2; do
	for v in $VARIANTS; do
		for t in 2 16; do
			bin=$D/nn.test spin=${v#spin}
			[ "$v" = base ] && bin=$D/nn-base.test spin=
			log=$L/train-$v-$t-r$round.txt
			read -r s0 i0 < <(cpu_ticks)
			FLASHGORGON_SPIN=$spin timeout 30 "$bin" -test.run XXX -test.bench 'TrainStep/L4_D256' \
				-test.benchtime 4x -test.cpu $t >"$log" 2>&1
			read -r s1 i1 < <(cpu_ticks)
			echo "steal_ticks $((s1 - s0)) idle_ticks $((i1 - i0))" >>"$log"
		done
	done
done
# The small config (2 layers, width 64, batch 32, context 64: ≈ 25 ms steps, loops of tens of µs
# at 16 threads, 0.98× its 2-thread rate in the fourth session): one process per variant.
for v in $VARIANTS; do
	bin=$D/nn.test spin=${v#spin}
	[ "$v" = base ] && bin=$D/nn-base.test spin=
	FLASHGORGON_SPIN=$spin timeout 15 "$bin" -test.run XXX -test.bench 'TrainStep/L2_D64_H4_T64_B32' \
		-test.benchtime 20x -test.cpu 2,16 >"$L/small-$v.txt" 2>&1
done
T1=$(date +%s)
FLASHGORGON_SPIN=5ms timeout 20 "$D/trainbench" -threads 16 -layers 4 -width 256 -heads 8 -context 256 \
	-batch 16 -vocab 96 -steps 6 -cpuprofile "$L/train-large-16.prof" >"$L/trainbench-16.json" 2>&1
T2=$(date +%s)
if python3 -c 'import torch' 2>/dev/null; then
	for t in 2 16; do
		timeout 25 python3 cmd/trainbench/gpt_twin.py --device cpu --threads $t --layers 4 --width 256 \
			--heads 8 --context 256 --batch 16 --steps 4 >"$L/torch-large-$t.json" 2>&1
	done
fi
T3=$(date +%s)
uptime >>"$L/machine.txt"
echo "seconds: benchmarks $((T1 - T0)), trainbench $((T2 - T1)), torch $((T3 - T2))" >>"$L/machine.txt"

# The summary: tokens/s of each process, steal and idle ticks beside.
{
	cat "$L/machine.txt"
	echo
	echo "## BenchmarkTrainStep/L4_D256 tokens/s, rounds 1 and 2 (steal and idle ticks of each process)"
	for v in $VARIANTS; do
		for t in 2 16; do
			line="$v threads=$t:"
			for r in 1 2; do
				f=$L/train-$v-$t-r$r.txt
				line="$line $(grep -o '[0-9.]* tokens/s' "$f" | cut -d' ' -f1) ($(tail -1 "$f"))"
			done
			echo "$line"
		done
	done
	echo
	echo "## BenchmarkTrainStep/L2_D64_H4_T64_B32 (small) tokens/s at 2 and 16 threads"
	for v in $VARIANTS; do
		echo "$v: $(grep -o '[0-9.]* tokens/s' "$L/small-$v.txt" | cut -d' ' -f1 | tr '\n' ' ')"
	done
	echo
	echo "## trainbench 16 threads, spin 5ms, profiled"
	cat "$L/trainbench-16.json"
	echo
	echo "## PyTorch twin (vocab 128)"
	cat "$L"/torch-large-*.json 2>/dev/null | grep tokens_per_s
} | tee "$L/summary.txt"
tar czf "$OUT/logs.tgz" -C "$OUT" logs
