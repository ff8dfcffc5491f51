// attention_hopper.cu: the attention forward on Hopper's warpgroup tensor-core instructions
// (wgmma, sm_90a only), bfloat16 operands with float32 accumulation: the same problem, masks,
// softmax and outputs as attention_mma.cu's variants 7 to 10 (o, L and LRes as there; rows with
// no visible key give o = 0, L = -Inf), which it replaces on compute capability 9.0
// (cuda/attention_mma.go, pickMMA). Variants 12 and 13 of mmaCfgs.
//
// Build: this file is compiled like the others by cuda/internal/genptx, but for compute_90,
// and its PTX header is then marked .target sm_90a, PTX ISA 8.0: the wgmma, fence.proxy.async
// instructions are written as inline PTX, which nvcc (11.8 here) passes through unchecked;
// ptxas (the driver's JIT, or nvcc >= 12.0's ptxas -arch=sm_90a) checks them. The driver JIT
// compiles sm_90a PTX for compute capability 9.0 only, so nothing here is loaded elsewhere.
//
// Work split: a block of NWG warpgroups (128 threads each) owns BM = 64 NWG query rows of one
// (b, h); warpgroup w the rows 64 w .. 64 w + 63, its warp i the 16 rows 64 w + 16 i + [0, 16)
// (so warp index and row r0 = m0 + 16 warp + g are as in attention_mma.cu, and FgRows serves
// unchanged: the wgmma accumulator layout of m64nN is, warp by warp, the m16n8 C layout of
// mma.sync, register 4 j + e = block j, element e). Per key tile of BN keys:
//   S = Q K_j^T    wgmma m64nBNk16, A = Q and B = K_j from shared memory (D / 16 products)
//   online softmax on S in registers (FgRows: exp2 with scale log2 e folded in, as variant 7)
//   O += P V_j     wgmma m64nDk16, A = P from registers (S's accumulators rounded to bfloat16
//                  are the A fragments, as in mma.sync), B = V_j from shared memory, N-major.
// K and V come from the bfloat16 pre-pass (fg_attn_mma_prep, contiguous [B][Hkv][Nk][D]);
// Q is converted from float32 (times the sign of scale, which keeps sl2 > 0) into shared
// memory once.
//
// Shared memory: Q [BM][D], K [2][BN][D], V [2][BN][D] bfloat16 in the 128-byte swizzle of
// wgmma (fg_sw128): each tile as D / 64 blocks of 64 columns, a block [R][64] with 128-byte
// rows, the 16-byte chunk c of row r stored at chunk c ^ (r mod 8), blocks aligned to 1024
// bytes. A descriptor (fg_wgmma_desc) gives the start of the 8 x 16 (K-major: rows x 16
// columns) or 16 x 64 (N-major: keys x columns) piece a product reads: K-major, rows are 128
// bytes apart, groups of 8 rows SBO = 1024 bytes, and the k16 step s of a block starts 32 s
// bytes into the row (the hardware applies the swizzle to the address bits, so an offset
// inside the 128-byte row is the logical one); N-major (V), 8-key groups SBO = 1024 bytes
// apart, 64-column blocks LBO = 128 BN bytes apart.
//
// Pipeline (cp.async into two buffers each of K and V, one __syncthreads per tile). Variant 12
// (OVL false): at the top of tile j every thread waits for its copies, fences them for the
// async proxy (wgmma reads shared memory through it), and the block syncs; then the copies of
// K_{j+1} and V_{j+1} start into the buffers tile j-1 used, and S_j, softmax_j and P_j V_j
// run. Variant 13 (OVL true, FlashAttention-3's intra-warpgroup overlap): tile j issues S_j
// and then P_{j-1} V_{j-1}, waits for S_j only, runs softmax_j while the tensor cores work on
// P_{j-1} V_{j-1}, then waits for it and rescales O; the copies started at tile j are K_{j+1}
// and V_j, and the last P V runs after the loop.
#include "mma.cuh"

namespace {

// fg_sw128 returns the byte offset of 16-byte chunk c (columns 8 c .. 8 c + 7) of row r in a
// swizzled bfloat16 tile of R rows (see above).
template <int R> __device__ __forceinline__ uint32_t fg_sw128(int r, int c) {
  return (uint32_t)((c / 8) * R * 128 + r * 128 + (((c % 8) ^ (r % 8)) << 4));
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

__device__ __forceinline__ void fg_cp_async16_s(uint32_t saddr, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(gmem), "r"(valid ? 16 : 0));
}

// fg_load_sw128 starts the copy of rows [0, ROWS) of a contiguous bfloat16 matrix g with rows
// of CH 16-byte chunks into the swizzled tile at shared address s; rows r >= nvalid are
// zero-filled without reading global memory.
template <int ROWS, int CH, int THREADS> __device__ __forceinline__ void fg_load_sw128(uint32_t s, const uint4* g, int nvalid) {
#pragma unroll
  for (int idx = threadIdx.x; idx < ROWS * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    const bool ok = r < nvalid;
    fg_cp_async16_s(s + fg_sw128<ROWS>(r, c), ok ? (const void*)(g + r * CH + c) : (const void*)g, ok);
  }
}

// ---- wgmma m64nNk16 bf16 -> f32 (generated text: one asm per shape) ----------------------------

// fg_wgmma_ss_n64: d = A B (accumulate 0) or d += A B (accumulate 1) for A [64 x 16] and
// B [16 x 64] bfloat16 in shared memory (descriptors da, db, both K-major), d [64 x 64] float32.
__device__ __forceinline__ void fg_wgmma_ss_n64(float (&d)[8][4], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(da), "l"(db), "r"(accumulate));
}

// fg_wgmma_rs_n64: d += A B for A [64 x 16] bfloat16 in registers (a: each warp's m16n8k16 A
// fragment of its 16 rows) and B [16 x 64] bfloat16 in shared memory, N-major (descriptor db).
__device__ __forceinline__ void fg_wgmma_rs_n64(float (&d)[8][4], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

// fg_wgmma_ss_n128: d = A B (accumulate 0) or d += A B (accumulate 1) for A [64 x 16] and
// B [16 x 128] bfloat16 in shared memory (descriptors da, db, both K-major), d [64 x 128] float32.
__device__ __forceinline__ void fg_wgmma_ss_n128(float (&d)[16][4], uint64_t da, uint64_t db, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
      : "l"(da), "l"(db), "r"(accumulate));
}

// fg_wgmma_rs_n128: d += A B for A [64 x 16] bfloat16 in registers (a: each warp's m16n8k16 A
// fragment of its 16 rows) and B [16 x 128] bfloat16 in shared memory, N-major (descriptor db).
__device__ __forceinline__ void fg_wgmma_rs_n128(float (&d)[16][4], const uint32_t (&a)[4], uint64_t db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
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

// fg_attn_fwd_wgmma (variants 12 and 13): grid (ceil(Nq/BM), H, B), 128 NWG threads, BM = 64
// NWG; D = 64 or 128 (d == D), BN = 64 or 128; k and v the pre-pass's bfloat16 planes.
template <int D, int BN, int NWG, bool OVL> __device__ void fg_attn_fwd_wgmma(const fg_attn_params& p) {
  constexpr int BM = 64 * NWG, THREADS = 128 * NWG;
  constexpr int CH = D / 8, NB = BN / 8, OB = D / 8, KS = D / 16;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;  // bytes of Q, of a K or V tile
  static_assert(D % 64 == 0 && BN % 64 == 0, "tile sizes");
  constexpr unsigned SMEM = QB + 4 * KB + 1024;  // + the alignment of the tiles to 1024 bytes
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sQ = (sbase + 1023) & ~1023u, sK = sQ + QB, sV = sK + 2 * KB;

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
  const uint4* k = (const uint4*)((const uint16_t*)p.k + b * p.k_batch + hk * p.k_head);
  const uint4* v = (const uint4*)((const uint16_t*)p.v + b * p.v_batch + hk * p.v_head);
  const float sl2 = (float)(fabs(p.scale) * 1.4426950408889634), qs = p.scale < 0 ? -1.f : 1.f;
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  FgRows<OB, float> rows(p, b, m0 + 16 * warp + g, t);
  if (kv_end <= 0) {
    rows.store(p, b, h);
    return;
  }
  const int tiles = (kv_end + BN - 1) / BN;
  const auto loadK = [&](int j) {
    fg_load_sw128<BN, CH, THREADS>(sK + (j & 1) * KB, k + (int64_t)j * BN * CH, kv_end - j * BN);
  };
  const auto loadV = [&](int j) {
    fg_load_sw128<BN, CH, THREADS>(sV + (j & 1) * KB, v + (int64_t)j * BN * CH, kv_end - j * BN);
  };

  // Q: float32 rows to bfloat16 chunks; rows past Nq zero.
  for (int idx = threadIdx.x; idx < BM * CH; idx += THREADS) {
    const int r = idx / CH, c = idx % CH;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (m0 + r < p.nq) {
      const float* qr = q + (int64_t)(m0 + r) * p.q_row + 8 * c;
      const float4 a = *(const float4*)qr, e = *(const float4*)(qr + 4);
      x = make_uint4(fg_bf16x2(qs * a.x, qs * a.y), fg_bf16x2(qs * a.z, qs * a.w), fg_bf16x2(qs * e.x, qs * e.y),
                     fg_bf16x2(qs * e.z, qs * e.w));
    }
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(sQ + fg_sw128<BM>(r, c)), "r"(x.x), "r"(x.y), "r"(x.z),
                 "r"(x.w)
                 : "memory");
  }
  loadK(0);
  if (!OVL) loadV(0);
  fg_cp_async_commit();

  // This warpgroup's 64 rows of Q: 64 wg rows into each 64-column block.
  const uint32_t qw = sQ + wg * 64 * 128;
  uint32_t pa[BN / 16][4];  // P of a tile as the A fragments of P V
  const auto pv = [&](int j) {  // O += P V_j (issued, not waited for)
    const uint32_t vt = sV + (j & 1) * KB;
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) FgWgmma<D>::rs(rows.o, pa[kk], fg_wgmma_desc(vt + kk * 16 * 128, BN * 128, 1024));
    fg_wgmma_commit();
  };

  for (int j = 0; j < tiles; ++j) {
    fg_cp_async_wait<0>();
    fg_fence_async();
    __syncthreads();  // tile j's K (and V) landed for every thread; every warpgroup is done with tile j-1's products
    if (j + 1 < tiles) loadK(j + 1);
    if (OVL)
      loadV(j);
    else if (j + 1 < tiles)
      loadV(j + 1);
    fg_cp_async_commit();

    // S = Q K_j^T.
    float s[NB][4];
    const uint32_t kt = sK + (j & 1) * KB;
    fg_wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < KS; ++kk) {
      const uint32_t off = (kk % 4) * 32;  // the k16 step inside a 128-byte row
      FgWgmma<BN>::ss(s, fg_wgmma_desc(qw + (kk / 4) * BM * 128 + off, 16, 1024),
                      fg_wgmma_desc(kt + (kk / 4) * BN * 128 + off, 16, 1024), kk > 0);
    }
    fg_wgmma_commit();
    if (OVL && j > 0) {
      pv(j - 1);  // P_{j-1} V_{j-1} runs under softmax_j
      fg_wgmma_wait<1>();
    } else {
      fg_wgmma_wait<0>();
    }
    fg_reg_fence(s);
    float alpha[2];
    rows.template probs<true, true>(s, j * BN, sl2, alpha);
    if (OVL && j > 0) {
      fg_wgmma_wait<0>();
      fg_reg_fence(rows.o);
    }
    rows.rescale(alpha);
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      pa[kk][0] = fg_bf16x2(s[2 * kk][0], s[2 * kk][1]), pa[kk][1] = fg_bf16x2(s[2 * kk][2], s[2 * kk][3]);
      pa[kk][2] = fg_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pa[kk][3] = fg_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3]);
    }
    if (!OVL) {
      fg_wgmma_fence();
      pv(j);
      fg_wgmma_wait<0>();
      fg_reg_fence(rows.o);
    }
  }
  if (OVL) {  // the last tile's P V, once its V landed
    fg_cp_async_wait<0>();
    fg_fence_async();
    __syncthreads();
    fg_wgmma_fence();
    pv(tiles - 1);
    fg_wgmma_wait<0>();
    fg_reg_fence(rows.o);
  }
  rows.store(p, b, h);
}

// ---- entry points (names built by cuda/attention_mma.go's mmaCfg.name) -----------------------

#define FG_FWD_WGMMA(V, OVL, D, BM, BN)                                                   \
  extern "C" __global__ void __launch_bounds__(2 * BM, 1)                                 \
      fg_attn_fwd_wgmma_v##V##_bf16_d##D##_m##BM##_n##BN(const fg_attn_params p) {          \
    fg_attn_fwd_wgmma<D, BN, BM / 64, OVL>(p);                                             \
  }
FG_FWD_WGMMA(12, false, 64, 128, 128)
FG_FWD_WGMMA(12, false, 128, 128, 128)
FG_FWD_WGMMA(13, true, 64, 128, 128)
FG_FWD_WGMMA(13, true, 128, 128, 128)
