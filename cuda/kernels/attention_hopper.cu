// attention_hopper.cu: the attention forward on Hopper's warpgroup tensor-core instructions
// (wgmma, sm_90a only), bfloat16 operands with float32 accumulation: the same problem, masks,
// softmax and outputs as attention_mma.cu's variants 7 to 10 (o, L and LRes as there; rows with
// no visible key give o = 0, L = -Inf), which it replaces on compute capability 9.0
// (cuda/attention_mma.go, pickMMA). Variants 12 and 13 of mmaCfgs; attention_hopper_bulk.cu's
// variants 14 and 15 are the same but for how the tiles get to shared memory. The wgmma
// primitives are in wgmma.cuh.
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
#include "mma_bwd.cuh"
#include "wgmma.cuh"

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
    if (m0 + r < p.nq) x = fg_bf16x8(q + (int64_t)(m0 + r) * p.q_row + 8 * c, qs);
    fg_st_shared16(sQ + fg_sw128<BM>(r, c), x);
  }
  loadK(0);
  if (!OVL) loadV(0);
  fg_cp_async_commit();

  // This warpgroup's 64 rows of Q: 64 wg rows into each 64-column block.
  const uint32_t qw = sQ + wg * 64 * 128;
  uint32_t pa[BN / 16][4];  // P of a tile as the A fragments of P V
  const auto pv = [&](int j) {  // O += P V_j (issued, not waited for)
    const uint32_t vt = sV + (j & 1) * KB;
    fg_wgmma_ab<D, BN>(rows.o, pa, vt);
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
    fg_wgmma_abt<BN, KS, BM>(s, qw, kt);
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
    fg_wgmma_pack<BN>(pa, s);
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

// fg_x3_fwd_smem is the shared memory of variants 27 and 30 (Go: mmaCfg.smem): Q hi, lo
// [BM][D] and two stages of K, V hi, lo [BN][D] in half, aligned to 1024 bytes.
__host__ __device__ constexpr unsigned fg_x3_fwd_smem(int D, int BN, int NWG) { return (2 * 64 * NWG + 8 * BN) * D * 2 + 1024; }

// fg_x3_fwd_item runs the query tile of BM rows at m0 of (b, h) for variants 27 and 30 (Exact
// in 3xF16, mma_bwd.cuh): variant 12's work with every product as three half products on hi
// and lo tiles (lo x hi, hi x lo, hi x hi), by the block's threads 0 .. 128 NWG - 1 (named
// barrier 1). K and V come from kv's half planes, each tile of BN keys scaled by its own
// powers of two (fg_x3_kv_tile; with FLAGS, variant 30, thread 0 waits for a tile's flag
// before the barrier after which its copies start). Q is split here with one power of two for
// the block's rows (and the sign of scale), from their largest magnitude. Tile j's scores are
// S' = 2^(q + k_j) S, so sl2 2^-(q + k_j) gives their exact products; P (<= 1, the online
// softmax's) is split as 2^15 P. The tensor cores' accumulator truncates, so O is not left in
// it: each key tile's P V goes into zeroed tile sums (64 columns each), added to O as
// O alpha + 2^-(15 + v_j) P'V' (one FFMA: the product by a power of two is exact); S sums over
// d in the accumulator (as the backward's 3xF16 S^T and S). Shared memory at sQ: Q hi, Q lo
// [BM][D], two stages of K hi, K lo, V hi, V lo [BN][D].
template <int D, int BN, int NWG, bool FLAGS, int QG, bool LATE = false>
__device__ __forceinline__ void fg_x3_fwd_item(const fg_attn_params& p, const FgX3Kv& kv, int m0, int h, int b,
                                               uint32_t sQ) {
  constexpr int BM = 64 * NWG, THREADS = 128 * NWG;
  constexpr int CH = D / 8, NB = BN / 8, OB = D / 8, KS = D / 16;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;  // bytes of a Q plane tile, of a K or V one
  static_assert(D % 64 == 0 && BN % 64 == 0, "tile sizes");
  // Stage s: K hi at sK + 4 KB s (lo + KB), V hi 2 KB after it.
  const uint32_t sK = sQ + 2 * QB;
  __shared__ unsigned qmax[2 * NWG * 4];
  const auto sync = []() { asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory"); };

  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
  const int64_t head = (int64_t)b * p.hkv + hk, u0 = head * kv.nt;  // tile j is u0 + j
  const uint4* k = (const uint4*)(kv.kh + head * p.nk * D);
  const uint4* v = (const uint4*)(kv.kh + 2 * kv.ke + head * p.nk * D);
  const int64_t lo = kv.ke / 8;  // hi plane to lo plane, in 16-byte chunks
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  FgRows<OB> rows(p, b, m0 + 16 * warp + g, t);
  if (kv_end <= 0) {
    rows.store(p, b, h);
    return;
  }
  const int tiles = (kv_end + BN - 1) / BN;
  const auto ready = [&](int j) {  // FLAGS: thread 0 waits until tile j is written
    if (FLAGS && threadIdx.x == 0) fg_tile_wait(kv.flags + u0 + j);
  };
  const auto load = [&](int j) {  // K and V of key tile j, hi and lo
    const uint32_t st = sK + (j & 1) * 4 * KB;
    const int64_t at = (int64_t)j * BN * CH;
    fg_load_sw128<BN, CH, THREADS>(st, k + at, kv_end - j * BN);
    fg_load_sw128<BN, CH, THREADS>(st + KB, k + lo + at, kv_end - j * BN);
    fg_load_sw128<BN, CH, THREADS>(st + 2 * KB, v + at, kv_end - j * BN);
    fg_load_sw128<BN, CH, THREADS>(st + 3 * KB, v + lo + at, kv_end - j * BN);
  };
  if constexpr (FLAGS) {
    ready(0);
    sync();  // tile 0 is written; every warpgroup is done with the block's item before (stages, Q)
  }
  load(0);
  fg_cp_async_commit();

  // Q: the block's largest magnitude (rows below Nq), then its rows split with that factor
  // times the sign of scale (sl2 > 0); rows past Nq zero. A thread's QI chunks are loaded QG at a
  // time; QG = QI issues every load before the first use and keeps them for the split (one
  // round trip per item, on its critical path), a smaller QG holds fewer registers and reads
  // Q twice.
  constexpr int QI = BM * CH / THREADS;  // 8-column chunks per thread
  static_assert(BM * CH % THREADS == 0 && QI % QG == 0, "Q chunks");
  float4 xq[QG][2];
  const auto loadq = [&](int i0) {
#pragma unroll
    for (int i = 0; i < QG; ++i) {
      const int idx = threadIdx.x + THREADS * (i0 + i), r = idx / CH, c = idx % CH;
      xq[i][0] = xq[i][1] = make_float4(0.f, 0.f, 0.f, 0.f);
      if (m0 + r < p.nq) {
        const float4* x = (const float4*)(q + (int64_t)(m0 + r) * p.q_row + 8 * c);
        xq[i][0] = x[0], xq[i][1] = x[1];
      }
    }
  };
  unsigned mq = 0;
#pragma unroll 1
  for (int i0 = 0; i0 < QI; i0 += QG) {
    loadq(i0);
#pragma unroll
    for (int i = 0; i < QG; ++i) mq = max(mq, max(fg_absmax_bits(xq[i][0]), fg_absmax_bits(xq[i][1])));
  }
  mq = __reduce_max_sync(0xffffffffu, mq);
  if (lane == 0) qmax[warp] = mq;
  sync();
  mq = 0;
#pragma unroll
  for (int w = 0; w < 4 * NWG; ++w) mq = max(mq, qmax[w]);
  const int eq = fg_x3_exp(__uint_as_float(mq));
  const float fq = (p.scale < 0 ? -1.f : 1.f) * fg_pow2(eq);
#pragma unroll 1
  for (int i0 = 0; i0 < QI; i0 += QG) {
    if (QG < QI) loadq(i0);
#pragma unroll
    for (int i = 0; i < QG; ++i) {
      const int idx = threadIdx.x + THREADS * (i0 + i), r = idx / CH, c = idx % CH;
      uint4 hi, lw;
      fg_f16_split2(xq[i][0].x, xq[i][0].y, fq, hi.x, lw.x);
      fg_f16_split2(xq[i][0].z, xq[i][0].w, fq, hi.y, lw.y);
      fg_f16_split2(xq[i][1].x, xq[i][1].y, fq, hi.z, lw.z);
      fg_f16_split2(xq[i][1].z, xq[i][1].w, fq, hi.w, lw.w);
      fg_st_shared16(sQ + fg_sw128<BM>(r, c), hi);
      fg_st_shared16(sQ + QB + fg_sw128<BM>(r, c), lw);
    }
  }
  const float sl2 = (float)(fabs(p.scale) * 1.4426950408889634);
  const float pf[2] = {32768.f, 32768.f};

  const uint32_t qw = sQ + wg * 64 * 128;  // this warpgroup's 64 rows of Q hi (lo at + QB)
  for (int j = 0; j < tiles; ++j) {
    fg_cp_async_wait<0>();
    fg_fence_async();
    if (j + 1 < tiles) ready(j + 1);
    sync();  // tile j landed for every thread (and Q's stores); every warpgroup is done with tile j - 1
    const auto load_next = [&] { fg_copy_if(j + 1 < tiles, [&] { load(j + 1); }); };
    if constexpr (!LATE) load_next();
    const int2 ex = __ldcg(kv.exps + u0 + j);  // tile j's exponents (in L2: written by another block)
    const uint32_t kt = sK + (j & 1) * 4 * KB, vt = kt + 2 * KB;
    float s[NB][4];
    fg_wgmma_fence();
    fg_x3_abt<BN, KS, BM>(s, qw, QB, kt, KB);  // S' = Q' K'^T
    fg_wgmma_commit();
    if constexpr (LATE) load_next();  // the next tile's copy while the tensor cores run S'
    fg_wgmma_wait<0>();
    fg_reg_fence(s);
    float alpha[2];
    rows.template probs<false, false>(s, j * BN, sl2 * fg_pow2(-(eq + ex.x)), alpha);  // exp2f, as the Exact kernels
    uint32_t ph[BN / 16][4], plo[BN / 16][4];
    fg_wgmma_pack_x3<BN>(ph, plo, s, pf);
    float ts[D / 64][8][4];  // P' V' in tile sums of 64 columns
    fg_wgmma_fence();
#pragma unroll
    for (int c = 0; c < D / 64; ++c) fg_x3_ab<64, BN>(ts[c], ph, plo, vt + c * BN * 128, KB);
    fg_wgmma_commit();
    fg_wgmma_wait<0>();
    const float cv = fg_pow2(-15 - ex.y);  // a tile sum's factor: P' = 2^15 P, V' = 2^v V
#pragma unroll
    for (int c = 0; c < D / 64; ++c) {
      fg_reg_fence(ts[c]);
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) rows.o[8 * c + n][e] = fmaf(rows.o[8 * c + n][e], alpha[e >> 1], ts[c][n][e] * cv);
    }
  }
  rows.store(p, b, h);
}

// fg_shared_1024 is the first 1024-byte aligned address of the dynamic shared memory.
__device__ __forceinline__ uint32_t fg_shared_1024() {
  return ((uint32_t)__cvta_generic_to_shared(fg_smem) + 1023) & ~1023u;
}

// fg_attn_fwd_wgmma_x3 (variant 27): grid (ceil(Nq/BM), H, B), 128 NWG threads, a query tile
// each (the last first: FgItem::block); p.k the planes of the pre-pass fg_attn_x3_kv.
template <int D, int BN, int NWG, bool LATE = false> __device__ void fg_attn_fwd_wgmma_x3(const fg_attn_params& p) {
  if (fg_dynamic_smem() < fg_x3_fwd_smem(D, BN, NWG)) __trap();
  const FgItem m = FgItem::block(p, 64 * NWG, BN);
  fg_x3_fwd_item<D, BN, NWG, false, D / 16, LATE>(p, FgX3Kv(p, p.k, BN), m.m0, m.h, m.b, fg_shared_1024());
}

// fg_attn_fwd_wgmma_x3_persist (variant 30): variant 27 in a persistent grid (the schedule of
// FgItem, as variants 19 to 22), without the pre-pass kernel: grid (G), 128 NWG + 128 threads,
// the consumers (fg_x3_fwd_item, item after item) and a converter warpgroup, which writes the
// tiles u = c, c + G, ... (u = (b Hkv + hk) NT + j, the order the items need them) into the
// planes at pp.dst with fg_x3_kv_tile and sets tile u's flag when it is written
// (fg_tile_ready; the flags zeroed by the launcher). Converter 0 first starts moving the next
// task's K and V rows into L2 (fg_prefetch_kv). The converters wait for nothing and every
// block is resident (G <= multiprocessors, one block each), so every flag is set in finite
// time. PREG and CREG are setmaxnreg's registers for the converters and the consumers (their
// sum over the block within the launch's 168 x 384); U the rows of K and of V a converter
// thread has in flight; QG the consumers' Q chunks loaded at a time (fg_x3_fwd_item).
template <int D, int BN, int NWG, int PREG, int CREG, int U, int QG, bool LATE = false>
__device__ void fg_attn_fwd_wgmma_x3_persist(const fg_mma_prep_params& pp) {
  constexpr int BM = 64 * NWG, CONSUMERS = 128 * NWG;
  static_assert(128 * PREG + CONSUMERS * CREG <= 168 * (CONSUMERS + 128) && PREG % 8 == 0 && CREG % 8 == 0, "setmaxnreg");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < fg_x3_fwd_smem(D, BN, NWG)) __trap();
  const FgX3Kv kv(p, pp.dst, BN);
  const int T = (p.nq + BM - 1) / BM, G = gridDim.x, c = blockIdx.x;
  const int64_t items = (int64_t)T * p.h * p.b, tasks = (int64_t)p.b * p.hkv * kv.nt;
  if (threadIdx.x >= CONSUMERS) {  // the converters
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PREG) : "memory");
    __shared__ unsigned part[8];
    const int tid = threadIdx.x - CONSUMERS;
    for (int64_t u = c; u < tasks; u += G) {
      if (const int64_t n = u + G; tid == 0 && n < tasks) {
        int b, hk, j0;
        kv.tile(n, p.hkv, BN, b, hk, j0);
        fg_prefetch_kv(p, b, hk, j0, BN, D);
      }
      fg_x3_kv_tile<D, BN, 128, U>(p, kv, u, tid, 6, part);
      fg_tile_ready<128>(kv.flags + u, tid);
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREG) : "memory");
  for (int k = 0;; ++k) {
    const int64_t w = fg_item(k, c, G);
    if (w >= items) break;
    const FgItem m(p, w, T, BM, BN);
    if (threadIdx.x == 0)
      if (const int64_t wn = fg_item(k + 1, c, G); wn < items) fg_prefetch_q(p, FgItem(p, wn, T, BM, BN), D, BM);
    fg_x3_fwd_item<D, BN, NWG, true, QG, LATE>(p, kv, m.m0, m.h, m.b, fg_shared_1024());
  }
}

// fg_attn_x3_kv (variant 27's pre-pass): grid-stride over the tiles of the planes (FgX3Kv at
// pp.dst), 256 threads a tile (fg_x3_kv_tile), each holding its 8 rows' float4 of K and V.
template <int D, int BN> __device__ void fg_attn_x3_kv(const fg_mma_prep_params& pp) {
  __shared__ unsigned part[16];
  const FgX3Kv kv(pp.src, pp.dst, BN);
  const int64_t tasks = (int64_t)pp.src.b * pp.src.hkv * kv.nt;
  for (int64_t u = blockIdx.x; u < tasks; u += gridDim.x) {
    fg_x3_kv_tile<D, BN, 256, BN * D / 1024>(pp.src, kv, u, threadIdx.x, 1, part);  // one read
    __syncthreads();  // part is reused
  }
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
// Variant 16: variant 12 with one warpgroup per block, so that two blocks share an SM and
// overlap each other's softmax and products (d = 128 with 64-key tiles, for two blocks'
// shared memory).
FG_FWD_WGMMA(16, false, 64, 64, 128)
FG_FWD_WGMMA(16, false, 128, 64, 64)

// Variant 27: Exact in 3xF16 (two warpgroups of 64 rows; d = 128 with 64-key tiles, whose two
// stages of four planes take 128 KiB), after its pre-pass fg_attn_x3_kv; variant 30 the same
// in a persistent grid with the pre-pass's work done by a converter warpgroup (setmaxnreg 56
// and 224, 4 rows of K and of V in flight per converter thread). (Variants 29, 31 and 32, the
// same with 2 and 1 rows in flight (setmaxnreg 40 and 232) and with Q loaded 2 chunks at a
// time, were slower at d = 128, N = 1024 causal: results/h100-2026-11-25-s16, call x29c; variant 31,
// 30 without the L2 prefetch, within noise of it, call x31.)
#define FG_FWD_WGMMA_X3(D, BM, BN)                                                       \
  extern "C" __global__ void __launch_bounds__(256) fg_attn_x3_kv_d##D##_n##BN(          \
      const fg_mma_prep_params pp) {                                                     \
    fg_attn_x3_kv<D, BN>(pp);                                                            \
  }                                                                                      \
  extern "C" __global__ void __launch_bounds__(2 * BM, 1)                                \
      fg_attn_fwd_wgmma_v27_exact_d##D##_m##BM##_n##BN(const fg_attn_params p) {          \
    fg_attn_fwd_wgmma_x3<D, BN, BM / 64>(p);                                              \
  }
#define FG_FWD_WGMMA_X3_PERSIST_L(V, D, BM, BN, PREG, CREG, U, QG, LATE)                 \
  extern "C" __global__ void __launch_bounds__(2 * BM + 128, 1)                          \
      fg_attn_fwd_wgmma_v##V##_exact_d##D##_m##BM##_n##BN(const fg_mma_prep_params pp) {  \
    fg_attn_fwd_wgmma_x3_persist<D, BN, BM / 64, PREG, CREG, U, QG, LATE>(pp);            \
  }
#define FG_FWD_WGMMA_X3_PERSIST(V, D, BM, BN, PREG, CREG, U, QG) FG_FWD_WGMMA_X3_PERSIST_L(V, D, BM, BN, PREG, CREG, U, QG, false)
FG_FWD_WGMMA_X3(64, 128, 128)
FG_FWD_WGMMA_X3(128, 128, 64)
FG_FWD_WGMMA_X3_PERSIST(30, 64, 128, 128, 56, 224, 4, 4)
FG_FWD_WGMMA_X3_PERSIST(30, 128, 128, 64, 56, 224, 4, 8)
// Variants 45 and 46 (eighteenth session): 27 and 30 with the next key tile's copy issued once
// the tile's S' product is (LATE), where 27 and 30 issue it first; as the backward's Late
// kernels (attention_hopper_bwd.cu).
#define FG_FWD_WGMMA_X3_LATE(D, BM, BN)                                                  \
  extern "C" __global__ void __launch_bounds__(2 * BM, 1)                                \
      fg_attn_fwd_wgmma_v45_exact_d##D##_m##BM##_n##BN(const fg_attn_params p) {          \
    fg_attn_fwd_wgmma_x3<D, BN, BM / 64, true>(p);                                        \
  }
FG_FWD_WGMMA_X3_LATE(64, 128, 128)
FG_FWD_WGMMA_X3_LATE(128, 128, 64)
FG_FWD_WGMMA_X3_PERSIST_L(46, 64, 128, 128, 56, 224, 4, 4, true)
FG_FWD_WGMMA_X3_PERSIST_L(46, 128, 128, 64, 56, 224, 4, 8, true)
// (Variant 28, variant 27 with one warpgroup per block and half the shared memory so that two
// blocks share an SM, ran 3-27% slower than 27 at N = 1024 and 4096 (d = 128 with 32-key tiles),
// results/h100-2026-11-24-s15 call x3f, and was dropped.)
