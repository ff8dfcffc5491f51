// wgmma.cuh: Hopper's warpgroup tensor-core products (wgmma, sm_90a) and the shared-memory
// layout they read, for attention_hopper.cu and attention_hopper_bulk.cu (see the first for
// the layouts and how this PTX is built).
#ifndef FLASHGORGON_WGMMA_CUH
#define FLASHGORGON_WGMMA_CUH

#include "mma.cuh"

namespace {

// fg_sw128 returns the byte offset of 16-byte chunk c (columns 8 c .. 8 c + 7) of row r in a
// swizzled bfloat16 tile of R rows (see above).
template <int R> __device__ __forceinline__ uint32_t fg_sw128(int r, int c) {
  return (uint32_t)((c / 8) * R * 128 + r * 128 + (((c % 8) ^ (r % 8)) << 4));
}

// fg_st_shared16 stores 16 bytes at shared-memory byte address a.
__device__ __forceinline__ void fg_st_shared16(uint32_t a, uint4 x) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(x.x), "r"(x.y), "r"(x.z), "r"(x.w) : "memory");
}

// fg_wgmma_desc is the shared-memory matrix descriptor of wgmma for the 128-byte swizzle:
// start address, leading and stride byte offsets (each >> 4 in 14 bits), swizzle mode 1 in
// bits 62-63, base offset 0 (the swizzle blocks are 1024-byte aligned).
__device__ __forceinline__ uint64_t fg_wgmma_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((saddr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
         (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ void fg_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void fg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void fg_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// fg_fence_async orders this thread's earlier shared-memory writes (st.shared, completed
// cp.async) before later reads through the async proxy (wgmma's operand reads).
__device__ __forceinline__ void fg_fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// fg_reg_fence keeps the compiler from moving accesses to an accumulator across the wgmma
// waits (the asm statements that read and write it are not where the hardware does).
template <int NB> __device__ __forceinline__ void fg_reg_fence(float (&d)[NB][4]) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
}

// ---- wgmma m64nNk16 bf16 -> f32 ----------------------------------------------------------------
// The accumulator d [64 x N] float32 is N/2 registers per thread, d[j][e] for j < N/8, e < 4,
// bound to the asm operands %0 .. %(N/2 - 1) in that order (FG_WG_D64, FG_WG_D128); the
// register list in the instruction text is spelled out once per shape (FG_WG_R64, FG_WG_R128).
#define FG_WG_D4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define FG_WG_D64                                                                               \
  FG_WG_D4(0), FG_WG_D4(1), FG_WG_D4(2), FG_WG_D4(3), FG_WG_D4(4), FG_WG_D4(5), FG_WG_D4(6), FG_WG_D4(7)
#define FG_WG_D128                                                                              \
  FG_WG_D64, FG_WG_D4(8), FG_WG_D4(9), FG_WG_D4(10), FG_WG_D4(11), FG_WG_D4(12), FG_WG_D4(13),     \
      FG_WG_D4(14), FG_WG_D4(15)
#define FG_WG_R64                                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FG_WG_R128                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, " \
  "%21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, " \
  "%40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, " \
  "%59, %60, %61, %62, %63}"

// fg_wgmma_ss_n64: d = A B (accumulate 0) or d += A B (accumulate 1) for A [64 x 16] and
// B [16 x 64] bfloat16 in shared memory (descriptors da, db, both K-major), d [64 x 64] float32.
__device__ __forceinline__ void fg_wgmma_ss_n64(float (&d)[8][4], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " FG_WG_R64 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
               : FG_WG_D64
               : "l"(da), "l"(db), "r"(accumulate));
}

// fg_wgmma_rs_n64: d += A B for A [64 x 16] bfloat16 in registers (a: each warp's m16n8k16 A
// fragment of its 16 rows) and B [16 x 64] bfloat16 in shared memory, N-major (descriptor db).
__device__ __forceinline__ void fg_wgmma_rs_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " FG_WG_R64 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
               : FG_WG_D64
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

// fg_wgmma_ss_n128: as fg_wgmma_ss_n64 with B [16 x 128] and d [64 x 128].
__device__ __forceinline__ void fg_wgmma_ss_n128(float (&d)[16][4], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FG_WG_R128 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
               : FG_WG_D128
               : "l"(da), "l"(db), "r"(accumulate));
}

// fg_wgmma_rs_n128: as fg_wgmma_rs_n64 with B [16 x 128] and d [64 x 128].
__device__ __forceinline__ void fg_wgmma_rs_n128(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " FG_WG_R128 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
               : FG_WG_D128
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

template <int N> struct FgWgmma;
template <> struct FgWgmma<64> {
  static __device__ __forceinline__ void ss(float (&d)[8][4], uint64_t da, uint64_t db, int acc) { fg_wgmma_ss_n64(d, da, db, acc); }
  static __device__ __forceinline__ void rs(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db) { fg_wgmma_rs_n64(d, a, db); }
};
template <> struct FgWgmma<128> {
  static __device__ __forceinline__ void ss(float (&d)[16][4], uint64_t da, uint64_t db, int acc) { fg_wgmma_ss_n128(d, da, db, acc); }
  static __device__ __forceinline__ void rs(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db) { fg_wgmma_rs_n128(d, a, db); }
};

}  // namespace

#endif  // FLASHGORGON_WGMMA_CUH
