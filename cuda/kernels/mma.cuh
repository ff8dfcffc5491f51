// mma.cuh: the tensor-core primitives shared by the attention kernels on mma.sync (compute
// capability 8.0+): asynchronous 16-byte copies into shared memory, operand conversions to
// bfloat16 and TF32 (and the 3xTF32 split), and the m16n8k16 bf16 / m16n8k8 tf32 products.
// Fragment layouts are described in attention_mma.cu.
#ifndef FLASHGORGON_MMA_CUH
#define FLASHGORGON_MMA_CUH

#include "common.cuh"

namespace {

__device__ __forceinline__ void fg_cp_async16(float* smem, const float* gmem, bool valid) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void fg_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void fg_cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// fg_mma_load_tile starts the copy of rows [0, ROWS) x columns [0, D) of a row-major global
// matrix g (row stride ld_g) into shared memory s (row stride LDS): rows r < nvalid are copied,
// the others are zero-filled without reading global memory.
template <int ROWS, int D, int LDS, int THREADS>
__device__ __forceinline__ void fg_mma_load_tile(float* s, const float* g, int64_t ld_g, int nvalid) {
  constexpr int CH = D / 4;  // 16-byte chunks per row
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16(s + r * LDS + c * 4, ok ? g + (int64_t)r * ld_g + c * 4 : g, ok);
  }
}

// ---- the products, by precision ---------------------------------------------------------------

__device__ __forceinline__ uint32_t fg_bf16x2(float lo, float hi) {  // lo in the lower half
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ uint32_t fg_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
// fg_split_tf32 splits x into hi = tf32(x) and lo = tf32(x - hi) (x - hi is exact in float32).
__device__ __forceinline__ void fg_split_tf32(float x, uint32_t& hi, uint32_t& lo) {
  hi = fg_tf32(x);
  lo = fg_tf32(x - __uint_as_float(hi));
}

__device__ __forceinline__ void fg_mma_bf16(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void fg_mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                            uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// fg_mma_3xtf32_split accumulates c += a b by 3xTF32 for operands split beforehand: A as
// ah, al and B fragment (b0, b1) as (bh0, bl0), (bh1, bl1); the small products first.
__device__ __forceinline__ void fg_mma_3xtf32_split(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4],
                                                    uint32_t bh0, uint32_t bl0, uint32_t bh1, uint32_t bl1) {
  fg_mma_tf32(c, al[0], al[1], al[2], al[3], bh0, bh1);
  fg_mma_tf32(c, ah[0], ah[1], ah[2], ah[3], bl0, bl1);
  fg_mma_tf32(c, ah[0], ah[1], ah[2], ah[3], bh0, bh1);
}

// fg_mma_3xtf32 accumulates c += a b for float32 A fragment a[4] and B fragment b[2] (tf32
// layouts) by 3xTF32: the small products first, then hi·hi.
__device__ __forceinline__ void fg_mma_3xtf32(float (&c)[4], const uint32_t (&ah)[4], const uint32_t (&al)[4],
                                              float b0, float b1) {
  uint32_t bh0, bl0, bh1, bl1;
  fg_split_tf32(b0, bh0, bl0);
  fg_split_tf32(b1, bh1, bl1);
  fg_mma_3xtf32_split(c, ah, al, bh0, bl0, bh1, bl1);
}

// ==== bfloat16 tiles in shared memory (moved here from attention_mma.cu for the backward,
// attention_mma_bwd.cu, which loads its fragments the same way) ====================================

__device__ __forceinline__ void fg_ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void fg_ldmatrix_x4_trans(uint32_t (&r)[4], const void* smem) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// fg_to_bf16_tile converts a float32 tile [ROWS][D] (row stride D) to bfloat16 with row stride
// LDH, every thread a float4 at a time.
template <int ROWS, int D, int LDH, int THREADS>
__device__ __forceinline__ void fg_to_bf16_tile(uint16_t* __restrict__ dst, const float* __restrict__ src) {
  constexpr int CH = D / 4;
#pragma unroll 4
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const float4 x = *(const float4*)&src[r * D + 4 * c];
    *(uint2*)&dst[r * LDH + 4 * c] = make_uint2(fg_bf16x2(x.x, x.y), fg_bf16x2(x.z, x.w));
  }
}

}  // namespace

#endif  // FLASHGORGON_MMA_CUH
