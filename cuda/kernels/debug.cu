// debug.cu: a kernel that faults on purpose. The tests launch it to check that a kernel fault
// comes back as a Go error naming the CUDA error and the op, and that the next call works
// (the launcher resets the context after such a sticky error).
#include "common.cuh"

extern "C" __global__ void fg_debug_trap(const fg_softmax_params p) {
  if (p.kind == 0) __trap();
}
