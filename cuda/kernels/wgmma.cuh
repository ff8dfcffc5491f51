// wgmma.cuh: Hopper's warpgroup tensor-core products (wgmma, sm_90a), the shared-memory
// layout they read and the products of attention on it, for attention_hopper.cu,
// attention_hopper_bulk.cu (the forward) and attention_hopper_bwd.cu (the backward); see the
// first for the layouts and how this PTX is built.
#ifndef FLASHGORGON_WGMMA_CUH
#define FLASHGORGON_WGMMA_CUH

#include "mma.cuh"

namespace {

// The key tile of the bulk layout (fg_attn_hopper_prep's tiling, fixed for the kernels that read
// it and the launcher: Go's hopperBN).
#define FG_HOPPER_BN 128

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

// The four products below take bfloat16 operands, or with F16 IEEE half (the Exact 3xF16
// kernels, mma_bwd.cuh): the same shapes, layouts and float32 accumulator. FG_WG_TY names the
// operand type in the instruction text; each product's asm is written once, for both.
#define FG_WG_TY(F16, ASM) \
  if constexpr (F16)       \
    ASM("f16");            \
  else                     \
    ASM("bf16")

// fg_wgmma_ss_n64: d = A B (accumulate 0) or d += A B (accumulate 1) for A [64 x 16] and
// B [16 x 64] bfloat16 (F16: half) in shared memory (descriptors da, db, both K-major),
// d [64 x 64] float32.
template <bool F16 = false>
__device__ __forceinline__ void fg_wgmma_ss_n64(float (&d)[8][4], uint64_t da, uint64_t db, int accumulate) {
#define FG_WG_SS64(TY)                                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                   \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " FG_WG_R64 ", %32, %33, p, 1, 1, 0, 0;\n}\n" \
               : FG_WG_D64                                                                                    \
               : "l"(da), "l"(db), "r"(accumulate))
  FG_WG_TY(F16, FG_WG_SS64);
#undef FG_WG_SS64
}

// fg_wgmma_rs_n64: d += A B (accumulate 1) or d = A B (0) for A [64 x 16] bfloat16 (F16: half)
// in registers (a: each warp's m16n8k16 A fragment of its 16 rows) and B [16 x 64] in shared
// memory (descriptor db), N-major (TB = 1: the instruction transposes it) or K-major (TB = 0).
template <int TB, bool F16 = false>
__device__ __forceinline__ void fg_wgmma_rs_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db, int accumulate) {
#define FG_WG_RS64(TY)                                                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                              \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " " FG_WG_R64 ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n" \
               : FG_WG_D64                                                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB))
  FG_WG_TY(F16, FG_WG_RS64);
#undef FG_WG_RS64
}

// fg_wgmma_ss_n128: as fg_wgmma_ss_n64 with B [16 x 128] and d [64 x 128].
template <bool F16 = false>
__device__ __forceinline__ void fg_wgmma_ss_n128(float (&d)[16][4], uint64_t da, uint64_t db, int accumulate) {
#define FG_WG_SS128(TY)                                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                    \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " FG_WG_R128 ", %64, %65, p, 1, 1, 0, 0;\n}\n" \
               : FG_WG_D128                                                                                    \
               : "l"(da), "l"(db), "r"(accumulate))
  FG_WG_TY(F16, FG_WG_SS128);
#undef FG_WG_SS128
}

// fg_wgmma_rs_n128: as fg_wgmma_rs_n64 with B [16 x 128] and d [64 x 128].
template <int TB, bool F16 = false>
__device__ __forceinline__ void fg_wgmma_rs_n128(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db, int accumulate) {
#define FG_WG_RS128(TY)                                                                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                               \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " " FG_WG_R128 ", {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n" \
               : FG_WG_D128                                                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate), "n"(TB))
  FG_WG_TY(F16, FG_WG_RS128);
#undef FG_WG_RS128
}

template <int N, bool F16 = false> struct FgWgmma;
template <bool F16> struct FgWgmma<64, F16> {
  static __device__ __forceinline__ void ss(float (&d)[8][4], uint64_t da, uint64_t db, int acc) { fg_wgmma_ss_n64<F16>(d, da, db, acc); }
  static __device__ __forceinline__ void rs(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db, int acc = 1) { fg_wgmma_rs_n64<1, F16>(d, a, db, acc); }
  static __device__ __forceinline__ void rs_k(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db, int acc) { fg_wgmma_rs_n64<0, F16>(d, a, db, acc); }
};
template <bool F16> struct FgWgmma<128, F16> {
  static __device__ __forceinline__ void ss(float (&d)[16][4], uint64_t da, uint64_t db, int acc) { fg_wgmma_ss_n128<F16>(d, da, db, acc); }
  static __device__ __forceinline__ void rs(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db, int acc = 1) { fg_wgmma_rs_n128<1, F16>(d, a, db, acc); }
  static __device__ __forceinline__ void rs_k(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db, int acc) { fg_wgmma_rs_n128<0, F16>(d, a, db, acc); }
};

// ---- wgmma m64nNk8 tf32 -> f32 (the Exact forward, attention_hopper_exact.cu) -----------------
// TF32 products take both operands K-major (no transposing form). A from registers is, warp by
// warp, mma.m16n8k8's tf32 A fragment: a[0] = (row g, k t), a[1] = (g + 8, t), a[2] = (g, t + 4),
// a[3] = (g + 8, t + 4) of the warp's 16 rows (lane = 4 g + t). N = 32, 64 or 128 (rs only).
#define FG_WG_D32 FG_WG_D4(0), FG_WG_D4(1), FG_WG_D4(2), FG_WG_D4(3)
#define FG_WG_R32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"

// FgWgmma<32>: d [64 x 32] = A B (accumulate 0) or d += A B, both from shared memory (the
// 3xF16 backward's S^T of 32-query tiles and S, dP of 32-key tiles at d = 128).
template <bool F16> struct FgWgmma<32, F16> {
  static __device__ __forceinline__ void ss(float (&d)[4][4], uint64_t da, uint64_t db, int accumulate) {
#define FG_WG_SS32(TY)                                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                                   \
               "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " " FG_WG_R32 ", %16, %17, p, 1, 1, 0, 0;\n}\n" \
               : FG_WG_D32                                                                                    \
               : "l"(da), "l"(db), "r"(accumulate))
    FG_WG_TY(F16, FG_WG_SS32);
#undef FG_WG_SS32
  }
};

template <int N> struct FgWgmmaTf32;
template <> struct FgWgmmaTf32<64> {
  // rs: d = A B (acc 0) or d += A B (1), A [64 x 8] in registers, B [8 x 64] in shared memory
  // (descriptor db, K-major), d [64 x 64] float32; ss: A in shared memory too (descriptor da).
  static __device__ __forceinline__ void rs(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " FG_WG_R64 ", {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : FG_WG_D64
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
  static __device__ __forceinline__ void ss(float (&d)[8][4], uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " FG_WG_R64 ", %32, %33, p, 1, 1;\n}\n"
                 : FG_WG_D64
                 : "l"(da), "l"(db), "r"(acc));
  }
};
template <> struct FgWgmmaTf32<32> {
  static __device__ __forceinline__ void rs(float (&d)[4][4], const uint32_t (&a)[4], uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " FG_WG_R32 ", {%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
                 : FG_WG_D32
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
  static __device__ __forceinline__ void ss(float (&d)[4][4], uint64_t da, uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 " FG_WG_R32 ", %16, %17, p, 1, 1;\n}\n"
                 : FG_WG_D32
                 : "l"(da), "l"(db), "r"(acc));
  }
};

template <> struct FgWgmmaTf32<128> {
  static __device__ __forceinline__ void rs(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db, int acc) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " FG_WG_R128 ", {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
                 : FG_WG_D128
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
  }
};

// fg_tf32_kstep is the byte offset of k step kk (8 tf32 columns, 32 bytes) in a swizzled tile of
// R rows: block kk / 4 of 32 columns, 32 (kk mod 4) bytes into its 128-byte rows.
template <int R> __device__ __forceinline__ uint32_t fg_tf32_kstep(int kk) { return (kk / 4) * R * 128 + (kk % 4) * 32; }

// fg_wgmma_tf32_x issues d = A B (from a zero accumulator), d [64 x N], over the KS k steps
// k0 .. k0 + KS - 1, not committed, not waited for. SPLIT (3xTF32): A = ah + al, ah[i] the register
// fragments of k step k0 + i, al fragments too (ALREG) or else, at shared address AL, this
// warpgroup's rows of a swizzled tile of AR rows (AL = tile + 128 x the first row); B = bh + bl,
// N rows starting at shared addresses bh and bl of swizzled tiles of BR rows, read along their
// rows. Per k step the small products first: al bh, ah bl, ah bh (al bl is below float32's
// rounding); HILAST: the small products of every k step first, then the hi·hi ones (the
// accumulator truncates each addition at its size, which the hi·hi terms set: adding them last
// truncates the sum fewer times at that size; attention_mma_bwd.cu's fg_bwd_3xtf32_k16). Without
// SPLIT (TF32), the one product ah bh (al, AL and bl unused).
template <int N, int KS, bool SPLIT, bool ALREG, int AR, int BR, bool HILAST = false>
__device__ __forceinline__ void fg_wgmma_tf32_x(float (&d)[N / 8][4], uint32_t (*ah)[4], uint32_t (*al)[4], uint32_t AL,
                                                uint32_t bh, uint32_t bl, int k0) {
#pragma unroll
  for (int i = 0; i < KS; ++i) {
    const int kk = k0 + i;
    const uint32_t off = fg_tf32_kstep<BR>(kk);
    if constexpr (!SPLIT) {
      FgWgmmaTf32<N>::rs(d, ah[i], fg_wgmma_desc(bh + off, 16, 1024), i > 0);
      continue;
    }
    if constexpr (ALREG)
      FgWgmmaTf32<N>::rs(d, al[i], fg_wgmma_desc(bh + off, 16, 1024), i > 0);
    else
      FgWgmmaTf32<N>::ss(d, fg_wgmma_desc(AL + fg_tf32_kstep<AR>(kk), 16, 1024), fg_wgmma_desc(bh + off, 16, 1024), i > 0);
    FgWgmmaTf32<N>::rs(d, ah[i], fg_wgmma_desc(bl + off, 16, 1024), 1);
    if constexpr (!HILAST) FgWgmmaTf32<N>::rs(d, ah[i], fg_wgmma_desc(bh + off, 16, 1024), 1);
  }
#pragma unroll
  for (int i = 0; i < KS && SPLIT && HILAST; ++i)
    FgWgmmaTf32<N>::rs(d, ah[i], fg_wgmma_desc(bh + fg_tf32_kstep<BR>(k0 + i), 16, 1024), 1);
}

// fg_exact_key is the row (key or query, within its group of 8) at position p of a transposed
// tf32 tile's rows (V^T in the Exact forward; Q^T, dO^T, K^T in its backward): the accumulator
// of m64nN gives lane (g, t) the columns 8 j + 2 t and 8 j + 2 t + 1 of every 8-column block j,
// which tf32's A fragment takes as k t and t + 4, so position p holds fg_exact_key(p) and a
// product's accumulator registers serve as the next product's A fragments as they are.
__device__ __forceinline__ int fg_exact_key(int p) { return p < 4 ? 2 * p : 2 * (p - 4) + 1; }

// fg_split4 splits the 4 floats of x into their tf32 hi and lo parts.
__device__ __forceinline__ void fg_split4(float4 x, uint4& hi, uint4& lo) {
  fg_split_tf32(x.x, hi.x, lo.x), fg_split_tf32(x.y, hi.y, lo.y);
  fg_split_tf32(x.z, hi.z, lo.z), fg_split_tf32(x.w, hi.w, lo.w);
}

// fg_add adds y to x's blocks j0 .. j0 + NY - 1 (float32, rounding to nearest), after y's
// wgmma completed: the Exact kernels' sum of a chain into its accumulator.
template <int NX, int NY> __device__ __forceinline__ void fg_add(float (&x)[NX][4], float (&y)[NY][4], int j0 = 0) {
  fg_reg_fence(y);
#pragma unroll
  for (int j = 0; j < NY; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) x[j0 + j][e] += y[j][e];
}

// fg_exact_put_split writes this warpgroup's 64 rows (64 wg .. 64 wg + 63) of the tile of BM
// rows at row m0 of the float32 matrix x (row stride row, D columns; rows at or past nq zero),
// split into tf32 parts, into swizzled K-major tiles of BM rows: lo at sl, and (HI) hi at sh.
template <int D, int BM, bool HI>
__device__ __forceinline__ void fg_exact_put_split(uint32_t sh, uint32_t sl, const float* x, int64_t row, int m0, int nq) {
  constexpr int CH = D / 4;
  const int wg = threadIdx.x / 128;
  for (int idx = threadIdx.x % 128; idx < 64 * CH; idx += 128) {
    const int r = 64 * wg + idx / CH, c = idx % CH;
    float4 v = make_float4(0, 0, 0, 0);
    if (m0 + r < nq) v = *(const float4*)(x + (int64_t)(m0 + r) * row + 4 * c);
    uint4 hi, lo;
    fg_split4(v, hi, lo);
    if (HI) fg_st_shared16(sh + fg_sw128<BM>(r, c), hi);
    fg_st_shared16(sl + fg_sw128<BM>(r, c), lo);
  }
}

// fg_exact_load_hi loads this warp's tf32 A fragments of x's rows r0 and r0 + 8 (row stride
// row; rows at or past nq zero) over KS k steps: a[kk] = (r0, 8 kk + t), (r0 + 8, 8 kk + t),
// (r0, 8 kk + t + 4), (r0 + 8, 8 kk + t + 4), each rounded to tf32 (the hi part).
template <int KS>
__device__ __forceinline__ void fg_exact_load_hi(uint32_t (&a)[KS][4], const float* x, int64_t row, int r0, int nq, int t) {
#pragma unroll
  for (int kk = 0; kk < KS; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = r0 + 8 * (i & 1), c = 8 * kk + t + 4 * (i >> 1);
      a[kk][i] = fg_tf32(r < nq ? x[(int64_t)r * row + c] : 0.f);
    }
}

// fg_wgmma_tf32_ss3 issues d = A B (3xTF32, from a zero accumulator), d [64 x N], over the KS
// k steps k0 .. k0 + KS - 1 with both operands in shared memory: A = ah + al, this
// warpgroup's 64 rows of swizzled tiles of AR rows at ah and al (tile + 128 x the first row),
// B = bh + bl, N rows of swizzled tiles of BR rows; the small products al bh, ah bl of every
// k step first, then the hi·hi ones (fg_wgmma_tf32_x's HILAST). Not committed, not waited for.
template <int N, int KS, int AR, int BR>
__device__ __forceinline__ void fg_wgmma_tf32_ss3(float (&d)[N / 8][4], uint32_t ah, uint32_t al, uint32_t bh, uint32_t bl,
                                                  int k0) {
#pragma unroll
  for (int i = 0; i < KS; ++i) {
    const uint32_t oa = fg_tf32_kstep<AR>(k0 + i), ob = fg_tf32_kstep<BR>(k0 + i);
    FgWgmmaTf32<N>::ss(d, fg_wgmma_desc(al + oa, 16, 1024), fg_wgmma_desc(bh + ob, 16, 1024), i > 0);
    FgWgmmaTf32<N>::ss(d, fg_wgmma_desc(ah + oa, 16, 1024), fg_wgmma_desc(bl + ob, 16, 1024), 1);
  }
#pragma unroll
  for (int i = 0; i < KS; ++i)
    FgWgmmaTf32<N>::ss(d, fg_wgmma_desc(ah + fg_tf32_kstep<AR>(k0 + i), 16, 1024),
                       fg_wgmma_desc(bh + fg_tf32_kstep<BR>(k0 + i), 16, 1024), 1);
}

// ---- tiles into shared memory, and the products of attention on them ---------------------------

__device__ __forceinline__ void fg_cp_async16_s(uint32_t saddr, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(valid ? 16 : 0));
}

// fg_copy_if issues a copy (load: cp.async calls) as one committed group when more is set: a
// step's copy of the next tile, which the kernels issue before the step's first products or
// (their Late forms) once those are issued.
template <class F> __device__ __forceinline__ void fg_copy_if(bool more, const F& load) {
  if (more) {
    load();
    fg_cp_async_commit();
  }
}

// fg_load_sw128 starts the copy of rows [0, ROWS) of a contiguous bfloat16 matrix g with rows
// of CH 16-byte chunks into the swizzled tile at shared address s; rows r >= nvalid are
// zero-filled without reading global memory. Called by threads 0 .. THREADS - 1: thread t
// copies chunk t mod CH of rows t / CH + k STEP (STEP = THREADS / CH, a multiple of 8, so those
// rows share one swizzle), a count and offsets known at compile time (the form of a loop over
// threadIdx.x cost a division, a 64-bit address and a bound test per chunk: the eighteenth
// session's ncu, results/h100-2026-11-25-s18 call B).
template <int ROWS, int CH, int THREADS> __device__ __forceinline__ void fg_load_sw128(uint32_t s, const uint4* g, int nvalid) {
  constexpr int STEP = THREADS / CH;
  static_assert(THREADS % CH == 0 && ROWS % STEP == 0 && STEP % 8 == 0, "passes of whole rows that share a swizzle");
  const unsigned t = threadIdx.x;
  const int r0 = (int)(t / CH);
  const uint32_t d0 = s + fg_sw128<ROWS>(r0, (int)(t % CH));
#pragma unroll
  for (int k = 0; k < ROWS / STEP; ++k) {
    const bool ok = r0 + k * STEP < nvalid;
    fg_cp_async16_s(d0 + k * STEP * 128, ok ? (const void*)(g + t + k * THREADS) : (const void*)g, ok);
  }
}

// fg_kv_head returns key 0 of head (b, hk) of the bfloat16 K or V plane x of the backward: at
// the strides batch and head, or with p.kv_tiles in the forward's planes of FG_HOPPER_BN-key
// tiles, ceil(Nk / FG_HOPPER_BN) tiles a head (the strides of p stay dK's and dV's).
__device__ __forceinline__ const uint16_t* fg_kv_head(const fg_attn_params& p, uint64_t x, int64_t batch, int64_t head,
                                                      int b, int hk) {
  if (p.kv_tiles)
    return (const uint16_t*)x + ((int64_t)b * p.hkv + hk) * ((p.nk + FG_HOPPER_BN - 1) / FG_HOPPER_BN) * FG_HOPPER_BN * p.d;
  return (const uint16_t*)x + b * batch + hk * head;
}

// fg_load_kv_sw128 is fg_load_sw128 for the ROWS keys n0 .. n0 + ROWS - 1 of one head of K or V
// (n0 a multiple of ROWS), head pointing at its key 0 (fg_kv_head): from a bfloat16 plane of
// rows `row` elements apart (tiles false), or (tiles true: fg_attn_params.kv_tiles) from the
// forward's planes of swizzled FG_HOPPER_BN-key tiles, where chunk c of key n lies at fg_sw128
// of (n mod FG_HOPPER_BN, c) in tile n / FG_HOPPER_BN (attention_hopper_persist.cu's converters).
template <int ROWS, int CH, int THREADS>
__device__ __forceinline__ void fg_load_kv_sw128(uint32_t s, const uint16_t* head, int n0, int64_t row, int nvalid,
                                                 bool tiles) {
  static_assert(FG_HOPPER_BN % ROWS == 0, "a block's keys lie in one of the forward's tiles");
  if (!tiles) {
    fg_load_sw128<ROWS, CH, THREADS>(s, (const uint4*)(head + (int64_t)n0 * row), nvalid);
    return;
  }
  // As fg_load_sw128: thread u copies chunk u mod CH of rows u / CH + k STEP, whose source
  // rows n0 mod FG_HOPPER_BN + ... share one swizzle too (n0 is a multiple of ROWS).
  constexpr int STEP = THREADS / CH;
  static_assert(THREADS % CH == 0 && ROWS % STEP == 0 && STEP % 8 == 0, "passes of whole rows that share a swizzle");
  const char* t = (const char*)head + (int64_t)(n0 / FG_HOPPER_BN) * (FG_HOPPER_BN * CH * 16);
  const unsigned u = threadIdx.x;
  const int r = (int)(u / CH), c = (int)(u % CH);
  const uint32_t d0 = s + fg_sw128<ROWS>(r, c);
  const char* s0 = t + fg_sw128<FG_HOPPER_BN>(n0 % FG_HOPPER_BN + r, c);
#pragma unroll
  for (int k = 0; k < ROWS / STEP; ++k) {
    const bool ok = r + k * STEP < nvalid;
    fg_cp_async16_s(d0 + k * STEP * 128, ok ? (const void*)(s0 + k * STEP * 128) : (const void*)t, ok);
  }
}

// fg_wgmma_abt issues d = A B^T (not committed, not waited for), d [64 x N] float32, over
// K = 16 KS columns: A the 64 rows that start at shared address a inside a swizzled tile of AR
// rows (a = tile + 128 x the first row), B the whole swizzled tile b of N rows, both read along
// their rows (K-major). The forward's S = Q K^T; the backward's S^T = K Q^T, dP^T = V dO^T,
// S = Q K^T and dP = dO V^T.
// With acc set the first step adds to d too (F16: half operands, fg_wgmma_ss_n64).
template <int N, int KS, int AR, bool F16 = false>
__device__ __forceinline__ void fg_wgmma_abt(float (&d)[N / 8][4], uint32_t a, uint32_t b, bool acc = false) {
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    const uint32_t off = (kk % 4) * 32;  // the k16 step inside a 128-byte row
    FgWgmma<N, F16>::ss(d, fg_wgmma_desc(a + (kk / 4) * AR * 128 + off, 16, 1024),
                        fg_wgmma_desc(b + (kk / 4) * N * 128 + off, 16, 1024), acc || kk > 0);
  }
}

// fg_wgmma_abt_r is fg_wgmma_abt with A [64 x 16 KS] from registers (fg_wgmma_load_a's
// fragments) instead of shared memory: B alone is read from shared memory.
template <int N, int KS>
__device__ __forceinline__ void fg_wgmma_abt_r(float (&d)[N / 8][4], const uint32_t (&a)[KS][4], uint32_t b) {
#pragma unroll
  for (int kk = 0; kk < KS; ++kk)
    FgWgmma<N>::rs_k(d, a[kk], fg_wgmma_desc(b + (kk / 4) * N * 128 + (kk % 4) * 32, 16, 1024), kk > 0);
}

// fg_wgmma_load_a loads the A fragments of fg_wgmma_abt_r for the warp's 16 rows r0 .. r0 + 15
// of a swizzled tile of R rows at shared address tile, over columns 0 .. 16 KS: fragment kk
// holds rows r0 + g (a[kk][0], a[kk][2]) and r0 + g + 8 (a[kk][1], a[kk][3]) at columns
// 16 kk + 2 t, + 1 (a[kk][0], a[kk][1]) and 16 kk + 8 + 2 t, + 1 (a[kk][2], a[kk][3]) (lane =
// 4 g + t), the m16n8k16 A layout.
template <int R, int KS>
__device__ __forceinline__ void fg_wgmma_load_a(uint32_t (&a)[KS][4], uint32_t tile, int r0, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < KS; ++kk)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t at = tile + fg_sw128<R>(r0 + g + 8 * (i & 1), 2 * kk + (i >> 1)) + 4 * t;
      asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(a[kk][i]) : "r"(at) : "memory");
    }
}

// fg_wgmma_ab issues d += A B (not committed, not waited for), d [64 x N] float32, A [64 x K]
// from registers (fg_wgmma_pack's fragments), B [K x N] the swizzled tile b of K rows, read
// down its columns (N-major). The forward's O += P V; the backward's dV += P^T dO,
// dK += dS^T Q and dQ += dS K.
// With acc false the first step overwrites d (d = A B).
template <int N, int K, bool F16 = false>
__device__ __forceinline__ void fg_wgmma_ab(float (&d)[N / 8][4], const uint32_t (&a)[K / 16][4], uint32_t b, bool acc = true) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    FgWgmma<N, F16>::rs(d, a[kk], fg_wgmma_desc(b + kk * 16 * 128, K * 128, 1024), acc || kk > 0);
}

// fg_wgmma_pack rounds the accumulator s [64 x K] to bfloat16 A fragments of fg_wgmma_ab (a
// warp's m16n8 C layout of two 8-column blocks is its m16n8k16 A layout).
template <int K> __device__ __forceinline__ void fg_wgmma_pack(uint32_t (&a)[K / 16][4], const float (&s)[K / 8][4]) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    a[kk][0] = fg_bf16x2(s[2 * kk][0], s[2 * kk][1]), a[kk][1] = fg_bf16x2(s[2 * kk][2], s[2 * kk][3]);
    a[kk][2] = fg_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), a[kk][3] = fg_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// fg_wgmma_pack_x3 is fg_wgmma_pack for 3xF16: the accumulator s [64 x K], each warp's rows g
// and g + 8 times f[0] and f[1], split into the half hi and lo A fragments of fg_wgmma_ab.
template <int K>
__device__ __forceinline__ void fg_wgmma_pack_x3(uint32_t (&hi)[K / 16][4], uint32_t (&lo)[K / 16][4],
                                                 const float (&s)[K / 8][4], const float (&f)[2]) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    fg_f16_split2(s[2 * kk][0], s[2 * kk][1], f[0], hi[kk][0], lo[kk][0]);
    fg_f16_split2(s[2 * kk][2], s[2 * kk][3], f[1], hi[kk][1], lo[kk][1]);
    fg_f16_split2(s[2 * kk + 1][0], s[2 * kk + 1][1], f[0], hi[kk][2], lo[kk][2]);
    fg_f16_split2(s[2 * kk + 1][2], s[2 * kk + 1][3], f[1], hi[kk][3], lo[kk][3]);
  }
}

// fg_x3_abt issues d = A B^T in three half products: A's hi and lo tiles at a, a + alo, B's
// at b, b + blo (fg_wgmma_abt's operands).
template <int N, int KS, int AR>
__device__ __forceinline__ void fg_x3_abt(float (&d)[N / 8][4], uint32_t a, uint32_t alo, uint32_t b, uint32_t blo) {
  fg_wgmma_abt<N, KS, AR, true>(d, a + alo, b);
  fg_wgmma_abt<N, KS, AR, true>(d, a, b + blo, true);
  fg_wgmma_abt<N, KS, AR, true>(d, a, b, true);
}
// fg_x3_ab issues d = A B in three half products, A from registers (hi, lo), B's tiles at b,
// b + blo (fg_wgmma_ab's operands).
template <int N, int K>
__device__ __forceinline__ void fg_x3_ab(float (&d)[N / 8][4], const uint32_t (&hi)[K / 16][4],
                                         const uint32_t (&lo)[K / 16][4], uint32_t b, uint32_t blo) {
  fg_wgmma_ab<N, K, true>(d, lo, b, false);
  fg_wgmma_ab<N, K, true>(d, hi, b + blo);
  fg_wgmma_ab<N, K, true>(d, hi, b);
}
}  // namespace

// ---- mbarriers and bulk copies (the forward kernels fed by whole-tile copies) ----------------

namespace {

__device__ __forceinline__ void fg_mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void fg_mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// fg_mbar_wait waits for the completion of the phase of parity parity of the mbarrier at bar.
// A phase that has not completed after 2^24 polls (a fraction of a second at least; the real
// waits are microseconds: a tile copy, or a warpgroup finishing a tile) never will: that is a
// bug of the protocol, and the kernel traps, so that the launch fails with an error instead of
// hanging the process.
__device__ __forceinline__ void fg_mbar_wait(uint32_t bar, int parity) {
  uint32_t done;
  for (uint32_t polls = 0;; ++polls) {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (done) return;
    if (polls == 1u << 24) __trap();
  }
}
// fg_bulk_load copies bytes (a multiple of 16) from global src to shared dst, counting them on
// the mbarrier bar, which it first tells to expect them; with HINT under L2 policy pol.
template <bool HINT = false>
__device__ __forceinline__ void fg_bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, uint64_t pol = 0) {
  if constexpr (!HINT) {
    asm volatile(
        "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%2], %1;\n}\n"
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%3], %1, [%2];\n" ::"r"(dst),
        "r"(bytes), "r"(bar), "l"(src)
        : "memory");
  } else {
    asm volatile(
        "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%2], %1;\n}\n"
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%3], %1, [%2], %4;\n" ::"r"(dst),
        "r"(bytes), "r"(bar), "l"(src), "l"(pol)
        : "memory");
  }
}

// ---- thread block clusters (the Exact backward's dK/dV kernel: two CTAs share their query tiles)

// fg_mbar_expect arrives on the mbarrier at bar, telling it to expect bytes more.
__device__ __forceinline__ void fg_mbar_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes) : "memory");
}
// fg_bulk_load_mc copies bytes (a multiple of 16) from global src to shared dst in every CTA of
// the cluster that mask names (bit r: CTA rank r), at the same offset in each, counting them on
// each one's mbarrier at bar (the same offset too), without an arrival (fg_mbar_expect's).
__device__ __forceinline__ void fg_bulk_load_mc(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(mask)
      : "memory");
}
// fg_bulk_copy is fg_bulk_load without the arrival (fg_mbar_expect's).
__device__ __forceinline__ void fg_bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst), "l"(src),
               "r"(bytes), "r"(bar)
               : "memory");
}
// fg_cluster_sync is a barrier of every thread of the cluster (release, acquire: what each did
// to shared memory before it, the others see after it).
__device__ __forceinline__ void fg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ uint32_t fg_cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

// ---- tiles converted inside a persistent forward (variants 20 to 22 and 26): the producer
// warpgroup's warps 1 to 3 (96 converter threads) write a tile into the scratch planes and set
// its flag; the producer's copying lane waits for the flag before it bulk-copies the tile.

__device__ __forceinline__ uint32_t fg_ld_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void fg_st_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
// fg_tile_ready sets flag f once every converter's writes of the tile are done: the barrier of
// the N converters (tid 0 to N - 1, named barrier 7) orders them before converter 0's fence
// (cumulative), the fence before the flag's release.
template <int N = 96> __device__ __forceinline__ void fg_tile_ready(uint32_t* f, int tid) {
  asm volatile("bar.sync 7, %0;\n" ::"n"(N) : "memory");
  if (tid == 0) {
    __threadfence();
    fg_st_release(f, 1);
  }
}
// fg_tile_wait waits for flag f (acquire, GPU scope), then fences the async proxy: the bulk
// copies read through it what the converters wrote through the generic proxy. A flag not set
// after 2^24 polls never will be (a bug of the protocol): the kernel traps instead of hanging.
__device__ __forceinline__ void fg_tile_wait(const uint32_t* f) {
  for (uint32_t polls = 0; !fg_ld_acquire(f); ++polls) {
    if (polls == 1u << 24) __trap();
    __nanosleep(64);
  }
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

// ---- the forward's K and V tile ring, fed by bulk copies (attention_hopper_bulk.cu,
// attention_hopper_persist.cu) -------------------------------------------------------------------

// FgRing is a two-stage ring of K and V tiles (KB bytes each) at shared addresses sK and sV,
// two tiles each, and its mbarriers at bars (8 bytes each: full K [2], full V [2], empty K [2],
// empty V [2]). Tile it of a block's sequence of tiles lives in stage it % 2; a full barrier
// counts the bytes of its bulk copy (expect_tx / complete_tx), an empty one the consumer
// threads done with the stage.
struct FgRing {
  uint32_t sK, sV, bars, KB;
  __device__ __forceinline__ uint32_t fullK(int s) const { return bars + 8 * s; }
  __device__ __forceinline__ uint32_t fullV(int s) const { return bars + 16 + 8 * s; }
  __device__ __forceinline__ uint32_t emptyK(int s) const { return bars + 32 + 8 * s; }
  __device__ __forceinline__ uint32_t emptyV(int s) const { return bars + 48 + 8 * s; }
  // at is the ring of KB-byte tiles whose K tiles start at shared address base, its V tiles
  // and its mbarriers after them.
  static __device__ __forceinline__ FgRing at(uint32_t base, uint32_t KB) {
    return FgRing{base, base + 2 * KB, base + 4 * KB, KB};
  }
  // init sets the barriers up (one thread; the block syncs before any use).
  __device__ __forceinline__ void init(int consumers) const {
    for (int s = 0; s < 2; ++s) {
      fg_mbar_init(fullK(s), 1), fg_mbar_init(fullV(s), 1);
      fg_mbar_init(emptyK(s), consumers), fg_mbar_init(emptyV(s), consumers);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // load copies tile it from kt and vt (the producer's one lane), each copy once the consumers
  // have released tile it - 2 from its stage.
  __device__ __forceinline__ void load(int it, const char* kt, const char* vt) const {
    const int s = it & 1, par = ((it >> 1) - 1) & 1;  // the phase that released tile it - 2
    if (it >= 2) fg_mbar_wait(emptyK(s), par);
    fg_bulk_load(sK + s * KB, kt, KB, fullK(s));
    if (it >= 2) fg_mbar_wait(emptyV(s), par);
    fg_bulk_load(sV + s * KB, vt, KB, fullV(s));
  }
  // load_head copies the first tiles tiles of key head `head` (b Hkv + hk) of the tile planes k
  // and v (nt tiles of KB bytes a head) as tiles it .. it + tiles - 1 of the block's sequence
  // (it = 0: the producer of a block that owns one query tile; a persistent block's producer
  // continues its sequence from item to item); with flags (the planes' tile flags, [B Hkv nt]),
  // each tile once its flag is set (fg_tile_wait).
  __device__ __forceinline__ void load_head(uint64_t k, uint64_t v, int64_t head, int nt, int tiles, int it = 0,
                                            const uint32_t* flags = nullptr) const {
    const char* kt = (const char*)k + head * nt * KB;
    const char* vt = (const char*)v + head * nt * KB;
    for (int j = 0; j < tiles; ++j) {
      if (flags) fg_tile_wait(flags + head * nt + j);
      load(it + j, kt + (int64_t)j * KB, vt + (int64_t)j * KB);
    }
  }
};

// ---- work items (attention_hopper_bulk.cu, attention_hopper_persist.cu, attention_hopper_exact.cu)
// Persistent grids: G blocks (G <= the multiprocessors) loop over the work items (b, h, query tile): item w =
// (b H + h) T + x, T = ceil(Nq / BM), query rows from (T - 1 - x) BM (longest first within a
// head when causal); block c takes, round after round of 2 G items, the items c and 2 G - 1 - c
// of the round (a snake: where 2 G is a multiple of T, tiles x and T - 1 - x pair up and every
// block's causal work per round is the same; Go: mmaCfg.persistGrid).

// FgItem is work item w: batch b, head h, key head hk, first query row m0 and the key tiles of
// BN its rows see.
struct FgItem {
  int b, h, hk, m0, tiles;
  __device__ __forceinline__ FgItem(const fg_attn_params& p, int64_t w, int T, int BM, int BN) {
    const int x = (int)(w % T);
    const int64_t bh = w / T;
    h = (int)(bh % p.h), b = (int)(bh / p.h), hk = h / (p.h / p.hkv);
    m0 = (T - 1 - x) * BM;
    tiles = (fg_key_limit(p, b, min(m0 + BM, p.nq) - 1) + BN - 1) / BN;
  }
  // block is the item of this block in the grids (ceil(Nq / BM), H, B) of the kernels that
  // own one query tile a block (attention_hopper_bulk.cu, attention_hopper_exact.cu): block
  // (x, h, b) takes item (b H + h) T + x, so the last query tiles run first (under the causal
  // mask they see the most keys, and starting them first leaves the short ones to fill the end
  // of the grid).
  static __device__ __forceinline__ FgItem block(const fg_attn_params& p, int BM, int BN) {
    return FgItem(p, ((int64_t)blockIdx.z * p.h + blockIdx.y) * gridDim.x + blockIdx.x, gridDim.x, BM, BN);
  }
};

// fg_item returns the k-th item of block c of G (the snake), which grows with k.
__device__ __forceinline__ int64_t fg_item(int k, int c, int G) {
  return (int64_t)(k / 2) * 2 * G + (k % 2 ? 2 * G - 1 - c : c);
}

// fg_prefetch_l2 starts moving bytes (a multiple of 16) at global src into L2.
__device__ __forceinline__ void fg_prefetch_l2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}

// fg_prefetch_rows starts moving rows (> 0) float32 rows of D columns, row stride ld, from x
// into L2: one block where they are contiguous (ld = D), else row by row.
__device__ __forceinline__ void fg_prefetch_rows(const float* x, int rows, int64_t ld, int D) {
  if (ld == D) {
    fg_prefetch_l2(x, (uint32_t)rows * D * 4);
  } else {
    for (int r = 0; r < rows; ++r) fg_prefetch_l2(x + r * ld, D * 4);
  }
}

// fg_prefetch_q starts moving item n's Q rows (float32, D columns) into L2.
__device__ __forceinline__ void fg_prefetch_q(const fg_attn_params& p, const FgItem& n, int D, int BM) {
  const float* q = (const float*)p.q + n.b * p.q_batch + n.h * p.q_head;
  fg_prefetch_rows(q + (int64_t)n.m0 * p.q_row, min(BM, p.nq - n.m0), p.q_row, D);
}

// fg_prefetch_kv starts moving the rows [j0, j0 + BN) below the batch's key length of K and of
// V of (b, key/value head hk) (float32, D columns) into L2, so that a converter's loads find L2
// instead of DRAM: variant 30's converters call it a task ahead, variant 38's as a task starts.
__device__ __forceinline__ void fg_prefetch_kv(const fg_attn_params& p, int b, int hk, int j0, int BN, int D) {
  const int rows = min(BN, fg_key_length(p, b) - j0);
  if (rows <= 0) return;
  fg_prefetch_rows((const float*)p.k + b * p.k_batch + hk * p.k_head + (int64_t)j0 * p.k_row, rows, p.k_row, D);
  fg_prefetch_rows((const float*)p.v + b * p.v_batch + hk * p.v_head + (int64_t)j0 * p.v_row, rows, p.v_row, D);
}

// fg_wgmma_put_q converts this warpgroup's chunks x of the query tile (fg_wgmma_load_q's
// QI chunks of 8 columns per thread, rows at or past nq zero), times qs, to bfloat16 in the
// swizzled tile of BM rows at sQ, then fences the writes for the async proxy and syncs the
// warpgroup (named barrier 1 + wg). With plane set, it also writes the rows below nq, unscaled,
// in bfloat16 to plane's rows m0 + 64 wg + r (D elements apart): the Q plane the backward reads.
template <int D, int BM, int QI>
__device__ __forceinline__ void fg_wgmma_put_q(uint32_t sQ, const float4 (&x)[QI][2], int m0, int nq, float qs, int wg,
                                               uint4* plane) {
  constexpr int CH = D / 8;
#pragma unroll
  for (int i = 0; i < QI; ++i) {
    const int idx = threadIdx.x % 128 + 128 * i, r = 64 * wg + idx / CH, c = idx % CH;
    const uint4 y = fg_bf16x8v(x[i][0], x[i][1], qs);
    fg_st_shared16(sQ + fg_sw128<BM>(r, c), y);
    if (plane && m0 + r < nq) plane[(int64_t)(m0 + r) * CH + c] = qs > 0 ? y : fg_bf16x8v(x[i][0], x[i][1]);
  }
  fg_fence_async();
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
}

// fg_wgmma_load_q writes this warpgroup's 64 rows of the query tile (global rows m0 + 64 wg + r
// of q, row stride qrow, times qs; rows at or past nq zero) into the swizzled bfloat16 tile of
// BM rows at sQ (fg_wgmma_put_q, plane as there), every load issued before the first
// conversion (one round trip per tile, not one per chunk).
template <int D, int BM>
__device__ __forceinline__ void fg_wgmma_load_q(uint32_t sQ, const float* q, int m0, int nq, int64_t qrow, float qs,
                                                int wg, uint4* plane = nullptr) {
  constexpr int CH = D / 8, QI = 64 * CH / 128;  // 8-column chunks per thread
  float4 x[QI][2];
#pragma unroll
  for (int i = 0; i < QI; ++i) {
    const int idx = threadIdx.x % 128 + 128 * i, r = 64 * wg + idx / CH, c = idx % CH;
    x[i][0] = x[i][1] = make_float4(0, 0, 0, 0);
    if (m0 + r < nq) {
      const float* row = q + (int64_t)(m0 + r) * qrow + 8 * c;
      x[i][0] = *(const float4*)row, x[i][1] = *(const float4*)(row + 4);
    }
  }
  fg_wgmma_put_q<D, BM>(sQ, x, m0, nq, qs, wg, plane);
}

// fg_wgmma_load_q_staged is fg_wgmma_load_q from the query tile's rows already in shared
// memory, float32 [BM][D] at qf (a bulk copy put them there; rows at or past nq hold anything
// and are read as zero).
template <int D, int BM>
__device__ __forceinline__ void fg_wgmma_load_q_staged(uint32_t sQ, uint32_t qf, int m0, int nq, float qs, int wg,
                                                       uint4* plane = nullptr) {
  constexpr int CH = D / 8, QI = 64 * CH / 128;
  float4 x[QI][2];
#pragma unroll
  for (int i = 0; i < QI; ++i) {
    const int idx = threadIdx.x % 128 + 128 * i, r = 64 * wg + idx / CH, c = idx % CH;
    x[i][0] = x[i][1] = make_float4(0, 0, 0, 0);
    if (m0 + r < nq) {
#pragma unroll
      for (int h = 0; h < 2; ++h)
        asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                     : "=f"(x[i][h].x), "=f"(x[i][h].y), "=f"(x[i][h].z), "=f"(x[i][h].w)
                     : "r"(qf + (uint32_t)(r * D + 8 * c + 4 * h) * 4)
                     : "memory");
    }
  }
  fg_wgmma_put_q<D, BM>(sQ, x, m0, nq, qs, wg, plane);
}

// fg_wgmma_tiles_ovl runs key tiles it .. it + tiles - 1 of the ring (tiles >= 1, the first
// at key 0) for this warpgroup's 64 query rows at shared address qw of a BM-row tile: S_j =
// Q K_j^T, online softmax (rows), O += P_j V_j, with FlashAttention-3's overlap of softmax_j
// with P_{j-1} V_{j-1} inside the warpgroup (the first tile peeled, so that the loop body is
// the same every time), each stage released as soon as its reads are done.
template <int D, int BM, int OB>
__device__ __forceinline__ void fg_wgmma_tiles_ovl(FgRows<OB, float>& rows, uint32_t qw, const FgRing& ring, int it,
                                                   int tiles, float sl2) {
  constexpr int BN = FG_HOPPER_BN, NB = BN / 8, KS = D / 16;
  uint32_t pa[BN / 16][4];
  float s[NB][4];
  float alpha[2];
  const auto par = [](int j) { return (j >> 1) & 1; };
  const auto qk = [&](int j) {  // S = Q K_j^T, issued
    fg_wgmma_abt<BN, KS, BM>(s, qw, ring.sK + (j & 1) * ring.KB);
    fg_wgmma_commit();
  };
  const auto pv = [&](int j) {  // O += P V_j, issued
    fg_wgmma_ab<D, BN>(rows.o, pa, ring.sV + (j & 1) * ring.KB);
    fg_wgmma_commit();
  };
  fg_mbar_wait(ring.fullK(it & 1), par(it));
  fg_wgmma_fence();
  qk(it);
  fg_wgmma_wait<0>();
  fg_reg_fence(s);
  fg_mbar_arrive(ring.emptyK(it & 1));
  rows.template probs<true, true>(s, 0, sl2, alpha);
  rows.rescale(alpha);
  fg_wgmma_pack<BN>(pa, s);
  for (int j = 1; j < tiles; ++j) {
    const int jt = it + j;
    fg_mbar_wait(ring.fullK(jt & 1), par(jt));
    fg_mbar_wait(ring.fullV((jt - 1) & 1), par(jt - 1));
    fg_wgmma_fence();
    qk(jt);
    fg_wgmma_fence();  // a fence per batch, as FlashAttention-3 (variant 13 without it is serialized)
    pv(jt - 1);        // P_{j-1} V_{j-1} runs under softmax_j
    fg_wgmma_wait<1>();
    fg_reg_fence(s);
    fg_mbar_arrive(ring.emptyK(jt & 1));
    rows.template probs<true, true>(s, j * BN, sl2, alpha);
    fg_wgmma_wait<0>();
    fg_reg_fence(rows.o);
    fg_mbar_arrive(ring.emptyV((jt - 1) & 1));
    rows.rescale(alpha);
    fg_wgmma_pack<BN>(pa, s);
  }
  const int last = it + tiles - 1;
  fg_mbar_wait(ring.fullV(last & 1), par(last));
  fg_wgmma_fence();
  pv(last);
  fg_wgmma_wait<0>();
  fg_reg_fence(rows.o);
  fg_mbar_arrive(ring.emptyV(last & 1));
}

}  // namespace

#endif  // FLASHGORGON_WGMMA_CUH
