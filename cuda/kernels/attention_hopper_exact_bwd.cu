// attention_hopper_exact_bwd.cu: the Exact attention backward on Hopper (sm_90a): the 3xTF32
// products of attention_mma_bwd.cu's Exact kernels on wgmma, for d = 64 (and for d = 128
// fg_attn_bwd_wgmma_exact_dkdv_ws1 and fg_attn_bwd_wgmma_exact_dq1). The problem, masks,
// outputs and the order of the float32 sums are attention_mma_bwd.cu's; with
// P_ij = exp2(s_ij scale log2 e - L2_i), s_ij = q_i . k_j, 0 where key j is not visible from
// row i (fg_key_limit), and (L2, delta) per query row from fg_attn_bwd_mma_pre:
//   dV_j = sum_i P_ij dO_i,  dS_ij = scale P_ij (dO_i . V_j - delta_i),
//   dK_j = sum_i dS_ij Q_i,  dQ_i = sum_j dS_ij K_j,
// dK and dV summed over the query heads of the key/value head's group (GQA). Two kernels, no
// atomics (the bits are the same on every run): dK/dV per 64 keys, dQ per 128 query rows (d = 128: 64).
//
// Precision (as the Exact forward, attention_hopper_exact.cu): every operand x is split as
// hi = tf32(x), lo = tf32(x - hi) and a b = a_lo b_hi + a_hi b_lo + a_hi b_hi; the tensor
// cores' accumulator truncates, so every product runs in chains of 2 k steps (16 head columns
// for S and dP, 16 queries for dV and dK, 16 keys for dQ) from a zero accumulator, the four
// small products of a chain before its two hi·hi ones (as attention_mma_bwd.cu's
// fg_bwd_3xtf32_k16), and the chains are added in float32, rounding to nearest, in order.
//
// TF32 wgmma reads both operands K-major (along the sum's index), so a pre-pass
// (fg_attn_bwd_exact_prep) writes every operand in the layout its product reads, as tf32 hi
// and lo planes (FgTf32Planes): Q, dO, K, V by rows (the B operands of S^T = K Q^T,
// dP^T = V dO^T, S = Q K^T, dP = dO V^T, and K, V as A), and Q^T, dO^T, K^T by columns (the B
// operands of dK += dS^T Q, dV += P^T dO, dQ += dS K), whose rows of 8 keys or queries are
// ordered as fg_exact_key says, so that P^T, dS^T and dS go from their accumulators to A
// fragments unchanged.
//
//   fg_attn_bwd_wgmma_exact_dkdv: one warpgroup owns 64 keys of one (b, key/value head) (K and
//   V hi and lo [64][D] in shared memory) and walks the query tiles of 32 rows of every query
//   head of its group that sees any of them (FgKvWalk), two stages of bulk copies ahead; two
//   CTAs, a cluster, own adjacent key blocks and walk the same query tiles (from the first
//   that sees the first block's keys), each copying half of every tile into both (multicast),
//   so that a query tile crosses from L2 once per 128 keys:
//     S^T  = K Q^T,  dP^T = V dO^T   wgmma m64n32k8, both operands from shared memory
//     P^T, dS^T in registers          (fg_bwd_pds_t; exp2f, as the mma.sync Exact kernels)
//     dV += P^T dO,  dK += dS^T Q     wgmma m64nDk8, A = P^T, dS^T split in registers, B the
//                                     dO^T and Q^T tiles [D][32]
//   Three forms: one warpgroup doing all of it (fg_attn_bwd_wgmma_exact_dkdv); the same in
//   clusters of two CTAs (CL); and the default, two warpgroups, the first computing S^T, dP^T
//   (K hi and V hi as A fragments in registers), P^T and dS^T and handing their fragments to
//   the second, which adds dV and dK (fg_attn_bwd_wgmma_exact_dkdv_ws; the default hands them over
//   as floats, RAW, and the second warpgroup splits them); at d = 128 the RAW form with one
//   stage of the query tile, its rows and columns refilled separately
//   (fg_attn_bwd_wgmma_exact_dkdv_ws1).
//   fg_attn_bwd_wgmma_exact_dq: two consumer warpgroups own 64 query rows each (Q hi and dO hi
//   as A fragments in registers, Q lo and dO lo [128][D] in shared memory, split from the
//   float32 inputs) and a producer warpgroup copies key tiles of 32 (K, V hi and lo [32][D],
//   K^T hi and lo [D][32]) into a two-stage ring:
//     S = Q K^T, dP = dO V^T          wgmma m64n32k8 (Q hi, dO hi from registers)
//     dS = scale P (dP - delta)        (FgDqRows.ds)
//     dQ += dS K                       wgmma m64nDk8, A = dS split in registers, B = K^T
//
//   fg_attn_bwd_wgmma_exact_dq1 (d = 128): one warpgroup of 64 query rows, Q lo, dO hi and lo in
//   shared memory (Q hi in registers, or there too), one stage of the key tile in two halves.
//
// Shared memory: swizzled tf32 tiles (fg_sw128 with 16-byte chunks of 4 floats, blocks of 32
// columns, 1024-byte aligned); dK/dV 192 KiB, dQ 192 KiB at d = 64 (d = 128 would need twice:
// its dK/dV kernel keeps one stage of the query tile, 209.5 KiB, and its dQ kernel one warpgroup
// and one stage of the key tile, 192 or 224 KiB).
#include "mma_bwd.cuh"
#include "wgmma.cuh"

namespace {

// FgTf32Planes is the layout of fg_attn_bwd_exact_prep's output at base (Go:
// exactBwdPlaneBytes): tiles of T = 32 rows (by rows) or 32 columns (by columns) of D floats,
// TB bytes each, tile t of a head holding rows 32 t .. 32 t + 31 (zeros past the valid rows).
// Four tensors, each as parts [B][heads][NT] tiles: Q and dO (heads H, NT = ceil(Nq / 32)) in
// parts 0 hi, 1 lo (by rows), 2 hi, 3 lo (by columns); K (Hkv, ceil(Nk / 32)) the same; V parts
// 0 and 1 only. A tile by rows is [32][D] in fg_sw128<32>'s layout (a bulk copy of it is a
// swizzled tile of 32 rows); by columns [D][32], row n the column n of the 32 rows, positions
// in fg_exact_key's order within each 8, in fg_sw128<D>'s layout (two consecutive tiles are a
// swizzled [D][64]).
template <int D> struct FgTf32Planes {
  static constexpr int T = 32;
  static constexpr uint32_t TB = T * D * 4;
  uint64_t q, dout, k, v;
  int ntq, ntk;
  int64_t pq, pk;  // bytes of a part of Q or dO, of K or V
  __device__ __forceinline__ FgTf32Planes(const fg_attn_params& p, uint64_t base) {
    ntq = (p.nq + T - 1) / T, ntk = (p.nk + T - 1) / T;
    pq = (int64_t)p.b * p.h * ntq * TB, pk = (int64_t)p.b * p.hkv * ntk * TB;
    q = base, dout = q + 4 * pq, k = dout + 4 * pq, v = k + 4 * pk;
  }
  // qtile and ktile return tile t of head bh (b H + h, or b Hkv + hk) in part `part` of Q's or
  // dO's planes x, of K's or V's.
  __device__ __forceinline__ const char* qtile(uint64_t x, int part, int64_t bh, int t) const {
    return (const char*)x + part * pq + (bh * ntq + t) * TB;
  }
  __device__ __forceinline__ const char* ktile(uint64_t x, int part, int64_t bh, int t) const {
    return (const char*)x + part * pk + (bh * ntk + t) * TB;
  }
  // copy_stage starts the bulk copies of a dK/dV stage at st (8 tiles, TB bytes apart): query
  // tile t of head bh, Q hi, lo, dO hi, lo by rows (copies 0-3), then by columns (4-7), all
  // counted on the mbarrier bar (thread 0). CL: CTA rank of a cluster of two copies tiles
  // 4 rank .. 4 rank + 3 into both CTAs (multicast); each CTA's bar counts all 8.
  template <bool CL> __device__ __forceinline__ void copy_stage(uint32_t st, uint32_t bar, int64_t bh, int t, uint32_t rank) const {
    fg_mbar_expect(bar, 8 * TB);
#pragma unroll
    for (int v = 0; v < (CL ? 4 : 8); ++v) {
      const int u = CL ? 4 * (int)rank + v : v;
      const char* src = stage_tile(u, bh, t);
      if constexpr (CL)
        fg_bulk_load_mc(st + u * TB, src, TB, bar, 3);
      else
        fg_bulk_copy(st + u * TB, src, TB, bar);
    }
  }
  // stage_tile is copy u of copy_stage (0-3 Q hi, lo, dO hi, lo by rows, 4-7 by columns) of
  // query tile t of head bh.
  __device__ __forceinline__ const char* stage_tile(int u, int64_t bh, int t) const {
    return qtile(u & 2 ? dout : q, (u & 1) + (u & 4 ? 2 : 0), bh, t);
  }
  // copy_half starts half of copy_stage, the rows (COLS false: copies 0-3) or the columns
  // (COLS: 4-7), into 4 tiles at st, counted on bar (one thread).
  template <bool COLS> __device__ __forceinline__ void copy_half(uint32_t st, uint32_t bar, int64_t bh, int t) const {
    fg_mbar_expect(bar, 4 * TB);
#pragma unroll
    for (int v = 0; v < 4; ++v) fg_bulk_copy(st + v * TB, stage_tile(v + (COLS ? 4 : 0), bh, t), TB, bar);
  }
  // key_tile is copy u of a dQ kernel's key tile j of key head bh: 0-3 K hi, lo, V hi, lo by
  // rows, 4-5 K hi, lo by columns (K^T).
  __device__ __forceinline__ const char* key_tile(int u, int64_t bh, int j) const {
    return ktile(u == 2 || u == 3 ? v : k, (u & 1) + (u >= 4 ? 2 : 0), bh, j);
  }
  // load_kv starts the copies (cp.async, THREADS threads; not committed) of keys n0 .. n0 + BN - 1
  // of key head bh, K hi, K lo, V hi, V lo (by rows), into swizzled tiles of BN rows at s,
  // BN D 4 bytes apart; tiles past the head's are zero-filled without a read.
  template <int BN, int THREADS> __device__ __forceinline__ void load_kv(uint32_t s, int64_t bh, int n0) const {
    constexpr uint32_t KB = BN * D * 4;
    load_kv<BN, THREADS>(s, s + KB, s + 2 * KB, s + 3 * KB, bh, n0);
  }
  // (the same with each part's own tile: K hi at kh, K lo at kl, V hi at vh, V lo at vl)
  template <int BN, int THREADS>
  __device__ __forceinline__ void load_kv(uint32_t kh, uint32_t kl, uint32_t vh, uint32_t vl, int64_t bh, int n0) const {
    for (int i = threadIdx.x; i < 4 * BN * (D / 4); i += THREADS) {
      const int part = i / (BN * (D / 4)), r = i / (D / 4) % BN, c = i % (D / 4);
      const int tile = n0 / T + r / T;
      const bool ok = tile < ntk;
      const char* src = ktile(part < 2 ? k : v, part & 1, bh, ok ? tile : 0) + fg_sw128<T>(r % T, c);
      fg_cp_async16_s((part == 0 ? kh : part == 1 ? kl : part == 2 ? vh : vl) + fg_sw128<BN>(r, c), src, ok);
    }
  }
};

}  // namespace

// fg_attn_bwd_exact_prep writes FgTf32Planes at pp.dst in one pass over its inputs: grid (G, 4),
// blockIdx.y the tensor (Q, dO, K, V), each block a tile of 32 rows at a time (grid-stride over
// the tensor's tiles). A thread reads 16-byte chunks of the tile's rows (4 columns of a row),
// writes their hi and lo by rows at once and keeps the floats in shared memory; then (Q, dO,
// K) each thread writes 16-byte chunks by columns from there: 4 positions of a column n, four
// lanes the four chunks of n's 64-byte half-row, which the swizzle keeps together (as the
// forward's V^T, attention_hopper_exact.cu). Rows at or past Nq (Q, dO) or the batch's key
// length (K, V) are written as zeros without a read. The tile in shared memory is [32][D + 1]
// floats: the column reads of a warp (8 columns, rows 0, 1, 8, 9 of a chunk's positions) then
// fall in distinct banks but for pairs.
template <int D> __device__ void fg_attn_bwd_exact_prep(const fg_mma_prep_params& pp) {
  const fg_attn_params& p = pp.src;
  if (p.d != D || blockDim.x != 256) __trap();
  using P = FgTf32Planes<D>;
  const P pl(p, pp.dst);
  constexpr int CH = D / 4, T = P::T, LD = D + 1;
  __shared__ float tile[T * LD];
  const int job = blockIdx.y;
  const bool isq = job < 2, bycol = job < 3;
  const float* x;
  int64_t sb, sh, sr;
  uint64_t dst;
  switch (job) {
    case 0: x = (const float*)p.q, sb = p.q_batch, sh = p.q_head, sr = p.q_row, dst = pl.q; break;
    case 1: x = (const float*)p.do_, sb = p.o_batch, sh = p.o_head, sr = p.o_row, dst = pl.dout; break;
    case 2: x = (const float*)p.k, sb = p.k_batch, sh = p.k_head, sr = p.k_row, dst = pl.k; break;
    default: x = (const float*)p.v, sb = p.v_batch, sh = p.v_head, sr = p.v_row, dst = pl.v; break;
  }
  const int heads = isq ? p.h : p.hkv, nt = isq ? pl.ntq : pl.ntk;
  const int64_t part = isq ? pl.pq : pl.pk, tiles = (int64_t)p.b * heads * nt;
  const int32_t* kl = (const int32_t*)p.key_lengths;
  for (int64_t tl = blockIdx.x; tl < tiles; tl += gridDim.x) {
    const int64_t bh = tl / nt;
    const int j0 = (int)(tl % nt) * T, h = (int)(bh % heads), b = (int)(bh / heads);
    const int lim = isq ? p.nq : (kl ? min(p.nk, kl[b]) : p.nk);
    const float* xh = x + b * sb + h * sh;
    char* const t = (char*)dst + tl * P::TB;
    for (int w = threadIdx.x; w < T * CH; w += 256) {  // by rows: row r, columns 4 c .. 4 c + 3
      const int r = w / CH, c = w % CH;
      float4 v = make_float4(0, 0, 0, 0);
      if (j0 + r < lim) v = *(const float4*)(xh + (int64_t)(j0 + r) * sr + 4 * c);
      uint4 hi, lo;
      fg_split4(v, hi, lo);
      const uint32_t at = fg_sw128<T>(r, c);
      *(uint4*)(t + at) = hi;
      *(uint4*)(t + part + at) = lo;
      if (bycol) {
        float* row = tile + r * LD + 4 * c;
        row[0] = v.x, row[1] = v.y, row[2] = v.z, row[3] = v.w;
      }
    }
    if (!bycol) continue;
    __syncthreads();
    for (int w = threadIdx.x; w < T * CH; w += 256) {  // by columns: column n, positions 4 c .. 4 c + 3
      const int n = (w / 4) % D, c = 4 * (w / (4 * D)) + w % 4;
      float e[4];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const int pos = 4 * c + u;
        e[u] = tile[((pos & ~7) + fg_exact_key(pos & 7)) * LD + n];
      }
      uint4 hi, lo;
      fg_split4(make_float4(e[0], e[1], e[2], e[3]), hi, lo);
      const uint32_t at = fg_sw128<D>(n, c);
      *(uint4*)(t + 2 * part + at) = hi;
      *(uint4*)(t + 3 * part + at) = lo;
    }
    __syncthreads();  // the tile's reads done before the next tile's writes
  }
}

namespace {

// fg_exact_chains issues NC chains (chain c: issue(dest, c)), C = NC / 2 of them for each of two
// accumulators x0, x1 (chains 0 .. C - 1 sum into x0, C .. NC - 1 into x1; x0 and x1 may be
// one), DEPTH (2 or 1) in flight. ADD false: the first chain of each accumulator writes it, the
// others go to the temporaries tmp and are added once complete, in order; ADD true: every chain
// goes to tmp and is added to what x0 and x1 hold. (DEPTH 1 uses tmp[0] alone: the same sums,
// NB x 4 registers fewer, no chain's product under another's addition.)
template <bool ADD, int NC, int DEPTH = 2, int NB, typename Issue>
__device__ __forceinline__ void fg_exact_chains(float (&x0)[NB][4], float (&x1)[NB][4], float (&tmp)[2][NB][4],
                                                const Issue& issue) {
  constexpr int C = NC / 2;
  static_assert(DEPTH == 1 || DEPTH == 2, "one or two chains in flight");
  const auto slot = [&](int c) -> float(&)[NB][4] { return tmp[DEPTH == 1 ? 0 : c % 2]; };
  const auto dest = [&](int c) -> float(&)[NB][4] { return ADD ? slot(c) : c == 0 ? x0 : c == C ? x1 : slot(c); };
  const auto done = [&](int c) {  // chain c has completed
    if (!ADD && c == 0)
      fg_reg_fence(x0);
    else if (!ADD && c == C)
      fg_reg_fence(x1);
    else if (c < C)
      fg_add(x0, slot(c));
    else
      fg_add(x1, slot(c));
  };
  if constexpr (DEPTH == 1) {
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      fg_wgmma_fence();
      issue(dest(c), c);
      fg_wgmma_commit();
      fg_wgmma_wait<0>();
      done(c);
    }
    return;
  }
  fg_wgmma_fence();
  issue(dest(0), 0);
  fg_wgmma_commit();
  issue(dest(1), 1);
  fg_wgmma_commit();
#pragma unroll
  for (int c = 2; c < NC; ++c) {
    fg_wgmma_wait<1>();
    done(c - 2);
    fg_wgmma_fence();
    issue(dest(c), c);
    fg_wgmma_commit();
  }
  fg_wgmma_wait<1>();
  done(NC - 2);
  fg_wgmma_wait<0>();
  done(NC - 1);
}

// fg_exact_frags splits a 64 x (8 KS) accumulator x into tf32 A fragments hi, lo: columns
// 8 kk + 2 t, + 1 as k t, t + 4 (the transposed tiles' fg_exact_key order).
template <int KS>
__device__ __forceinline__ void fg_exact_frags(const float (&x)[KS][4], uint32_t (&hi)[KS][4], uint32_t (&lo)[KS][4]) {
#pragma unroll
  for (int kk = 0; kk < KS; ++kk) {
    fg_split_tf32(x[kk][0], hi[kk][0], lo[kk][0]), fg_split_tf32(x[kk][2], hi[kk][1], lo[kk][1]);
    fg_split_tf32(x[kk][1], hi[kk][2], lo[kk][2]), fg_split_tf32(x[kk][3], hi[kk][3], lo[kk][3]);
  }
}

// fg_ws_put writes P^T (s) and dS^T (dp) as floats to the handover buffer of the two-warpgroup
// dK/dV kernels (RAW): pb this thread's first 16 bytes, block k at pb[128 k] (P^T 0 .. NB - 1,
// dS^T NB .. 2 NB - 1). fg_ws_get reads NB blocks from block k0 on into x.
template <int NB> __device__ __forceinline__ void fg_ws_put(uint4* pb, const float (&s)[NB][4], const float (&dp)[NB][4]) {
#pragma unroll
  for (int k = 0; k < 2 * NB; ++k) {
    const float(&x)[4] = k < NB ? s[k] : dp[k - NB];
    pb[128 * k] = make_uint4(__float_as_uint(x[0]), __float_as_uint(x[1]), __float_as_uint(x[2]), __float_as_uint(x[3]));
  }
}
template <int NB> __device__ __forceinline__ void fg_ws_get(const uint4* pb, float (&x)[NB][4], int k0) {
#pragma unroll
  for (int k = 0; k < NB; ++k) {
    const uint4 y = pb[128 * (k0 + k)];
    x[k][0] = __uint_as_float(y.x), x[k][1] = __uint_as_float(y.y), x[k][2] = __uint_as_float(y.z), x[k][3] = __uint_as_float(y.w);
  }
}

// fg_dkdv_copy_ld starts the two-warpgroup dK/dV kernels' copy (cp.async, warpgroup 0's 128
// threads) of (L2, delta) of step it's BM query rows into slot it % 2 of sLD (zeros past Nq;
// nothing past the walk's last step) and commits a cp.async group, empty or not, so that
// waiting for all groups at step it finds its rows landed.
template <int BM>
__device__ __forceinline__ void fg_dkdv_copy_ld(float2* sLD, const fg_attn_params& p, int b, const FgKvWalk<BM>& walk, int it) {
  if (it < walk.total) {
    const int64_t bh = (int64_t)b * p.h + walk.hq(it);
    fg_bwd_copy_ld<BM, 128>((float*)(sLD + (it & 1) * BM), (const float*)p.delta + 2 * (bh * p.nq + walk.m0(it)),
                            p.nq - walk.m0(it));
  }
  fg_cp_async_commit();
}

}  // namespace

// fg_attn_bwd_wgmma_exact_dkdv: grid (ceil(Nk / 64) rounded up to even, Hkv, B) in clusters of
// 2 along x (CL; without, ceil(Nk / 64) blocks, each copying whole tiles), 128 threads; pp.src the problem, pp.dst the pre-pass's planes. Shared memory: K
// hi, lo and V hi, lo [64][D] (fg_sw128<64>), two stages of the query tile (Q hi, lo, dO hi,
// lo [32][D]; Q^T hi, lo, dO^T hi, lo [D][32]; (L2, delta) [32]) and a full mbarrier per stage
// (one arrival expecting the 8 tiles' bytes; CTA rank r copies tiles 4 r .. 4 r + 3 to both).
// Step it: wait for its stage, S^T and dP^T (8 chains), P^T and dS^T, dV and dK (4 chains);
// when every product of the step has completed, the cluster syncs and thread 0 of each CTA
// copies its half of tile it + 2 into the stage of both.
template <int D, bool CL> __device__ void fg_attn_bwd_wgmma_exact_dkdv(const fg_mma_prep_params& pp) {
  using P = FgTf32Planes<D>;
  constexpr int BN = 64, BM = P::T, NB = BM / 8, OB = D / 8;
  constexpr uint32_t TB = P::TB, KH = BN * D * 4, STAGE = 8 * TB;
  constexpr unsigned SMEM = 4 * KH + 2 * STAGE + 2 * BM * 8 + 16 + 1024;
  static_assert(D == 64, "d = 64 only: shared memory");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sK = (sbase + 1023) & ~1023u, sV = sK + 2 * KH, sS = sK + 4 * KH;  // stage s at sS + s STAGE
  float2* const sLD = (float2*)(fg_smem + (sS + 2 * STAGE - sbase));             // stage s: sLD + BM s
  const uint32_t bars = sS + 2 * STAGE + 2 * BM * 8;                               // full [2]
  const P pl(p, pp.dst);

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t rank = CL ? fg_cluster_rank() : 0;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0 - (int)rank * BN, p.h / p.hkv);  // the cluster's walk
  const int klen = walk.klen, total = walk.total;
  if (threadIdx.x == 0) {
    fg_mbar_init(bars, 1), fg_mbar_init(bars + 8, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if constexpr (CL)
    fg_cluster_sync();  // both CTAs' barriers ready before either copies
  else
    __syncthreads();

  // issue starts the copies of step it into its stage (thread 0: the 8 tiles; threads < BM:
  // (L2, delta) of the tile's rows, zero past Nq) and commits a cp.async group (empty past the
  // last step), so that before step it the group of step it is the second newest.
  const auto issue = [&](int it) {
    if (it < total) {
      const int sg = it & 1, hq = walk.hq(it), m0 = walk.m0(it);
      const int64_t bh = (int64_t)b * p.h + hq;
      const uint32_t st = sS + sg * STAGE, bar = bars + 8 * sg;
      if (threadIdx.x == 0) pl.template copy_stage<CL>(st, bar, bh, m0 / BM, rank);
      fg_bwd_copy_ld<BM, 128>((float*)(sLD + sg * BM), (const float*)p.delta + 2 * (bh * p.nq + m0), p.nq - m0);
    }
    fg_cp_async_commit();
  };
  if (total > 0) pl.template load_kv<BN, 128>(sK, (int64_t)b * p.hkv + hk, n0);
  issue(0);
  issue(1);

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  const int kr = 16 * warp + g;  // this lane's keys n0 + kr, + 8
  for (int it = 0; it < total; ++it) {
    const int sg = it & 1, m0 = walk.m0(it);
    const uint32_t st = sS + sg * STAGE;
    fg_cp_async_wait<1>();
    fg_fence_async();
    fg_mbar_wait(bars + 8 * sg, (it >> 1) & 1);
    asm volatile("bar.sync 1, 128;\n" ::: "memory");  // (L2, delta) and, at step 0, K and V landed

    float s[NB][4], dp[NB][4], tmp[2][NB][4];
    // S^T = K Q^T (chains 0-3), dP^T = V dO^T (4-7), 16 head columns each.
    fg_exact_chains<false, 8>(s, dp, tmp, [&](float (&d)[NB][4], int c) {
      const uint32_t a = c < 4 ? sK : sV, bq = st + (c < 4 ? 0 : 2) * TB;
      fg_wgmma_tf32_ss3<BM, 2, BN, BM>(d, a, a + KH, bq, bq + TB, 2 * (c % 4));
    });
    fg_bwd_pds_t<false>(s, dp, sLD + sg * BM, 0, m0, n0, kr, t, klen, fg_dkdv_masked<BM, BN>(p, m0, n0, klen), sl2, scale, p);
    uint32_t ph[NB][4], plo[NB][4], dh[NB][4], dl[NB][4];
    fg_exact_frags(s, ph, plo);
    fg_exact_frags(dp, dh, dl);
    // dV += P^T dO (chains 0, 1), dK += dS^T Q (2, 3), 16 queries each.
    float ot[2][OB][4];
    fg_exact_chains<true, 4>(dv, dk, ot, [&](float (&d)[OB][4], int c) {
      const uint32_t bt = st + (c < 2 ? 6 : 4) * TB;
      fg_wgmma_tf32_x<D, 2, true, true, 0, D, true>(d, (c < 2 ? ph : dh) + 2 * (c % 2), (c < 2 ? plo : dl) + 2 * (c % 2), 0, bt,
                                              bt + TB, 2 * (c % 2));
    });
    if constexpr (CL)
      fg_cluster_sync();  // every product and read of this stage done, in both CTAs
    else
      asm volatile("bar.sync 1, 128;\n" ::: "memory");
    issue(it + 2);
  }

  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_wgmma_exact_dkdv_ws: fg_attn_bwd_wgmma_exact_dkdv with its two halves on two
// warpgroups (warp specialization, 256 threads): warpgroup 0 computes S^T and dP^T of query tile
// it and from them P^T and dS^T, split into tf32 A fragments, which it hands through shared
// memory (the fragment buffer PB: each thread's 64 registers, 16 bytes per thread at a time)
// to warpgroup 1, which adds P^T dO and dS^T Q into dV and dK; so the products of tile it + 1's
// S^T and dP^T run while warpgroup 1 waits for or runs those of tile it, and the
// exponentials of one warpgroup beside the products of the other. The buffer's mbarriers
// (each thread of one warpgroup arrives, the other's wait): full (warpgroup 0 wrote step it),
// empty (warpgroup 1 read it); named barriers: 4 (warpgroup 0's (L2, delta) rows landed), 1
// (warpgroup 1 done with a stage). Warpgroup 1's thread 0 copies
// tile it + 2 into the stage of tile it once warpgroup 1 is done with it (warpgroup 0 was done
// before it handed tile it over). Shared memory: K, V hi, lo [64][D], two stages of the query
// tile (8 tiles), PB (32 KiB), (L2, delta) of two tiles, 4 mbarriers (full [2], PB full, empty).
//
// Shared memory's bandwidth, not the tensor cores, bounds this kernel: per query tile the
// products read about 128 KiB (S^T's and dP^T's A lo and B, dV's and dK's B), the bulk copies
// write 64 KiB and the handover moves 64 KiB, about 2,000 cycles at 128 bytes a cycle against
// about 1,500 of tf32 tensor work. Two forms cut it: REG, K lo and V lo as register A
// fragments too (warpgroup 0 then reads only B from shared memory: 32 KiB a tile less), and
// RAW, P^T and dS^T handed over as floats (PB 16 KiB, each thread's 32 floats), which
// warpgroup 1 splits (fg_exact_frags) itself: the same bits, half the handover's bytes, and
// warpgroup 0 free of the split and of 64 registers (which REG needs). Tried and removed
// (results/h100-2026-11-24-s13, calls C-E): AHEAD, the next tile's first S^T and dP^T chains
// issued before this tile's exponentials; ptxas serialized its wgmmas in every form (C7518 with
// a wgmma behind an if, C7514 and C7515 with registers carried across the loop), 40-70% slower.
template <int D, bool REG, bool RAW> __device__ void fg_attn_bwd_wgmma_exact_dkdv_ws(const fg_mma_prep_params& pp) {
  using P = FgTf32Planes<D>;
  constexpr int BN = 64, BM = P::T, NB = BM / 8, OB = D / 8;
  constexpr uint32_t TB = P::TB, KH = BN * D * 4, STAGE = 8 * TB, PB = (RAW ? 8 : 16) * 128 * 16;
  constexpr unsigned SMEM = 4 * KH + 2 * STAGE + PB + 2 * BM * 8 + 32 + 1024;
  static_assert(D == 64, "d = 64 only: shared memory");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sK = (sbase + 1023) & ~1023u, sV = sK + 2 * KH, sS = sK + 4 * KH, sP = sS + 2 * STAGE;
  float2* const sLD = (float2*)(fg_smem + (sP + PB - sbase));  // tile it's rows at sLD + BM (it % 2)
  const uint32_t bars = sP + PB + 2 * BM * 8;                    // full [2], PB full, PB empty
  const uint32_t pfull = bars + 16, pempty = bars + 24;
  const P pl(p, pp.dst);

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool wg0 = threadIdx.x < 128;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, p.h / p.hkv);
  const int klen = walk.klen, total = walk.total;
  const int kr = 16 * warp + g;  // this lane's keys n0 + kr, + 8
  const auto copy_tile = [&](int it) {  // one thread: the 8 tiles of step it into its stage
    pl.template copy_stage<false>(sS + (it & 1) * STAGE, bars + 8 * (it & 1), (int64_t)b * p.h + walk.hq(it), walk.m0(it) / BM, 0);
  };
  const auto copy_ld = [&](int it) { fg_dkdv_copy_ld(sLD, p, b, walk, it); };  // warpgroup 0
  if (threadIdx.x == 0) {
    fg_mbar_init(bars, 1), fg_mbar_init(bars + 8, 1), fg_mbar_init(pfull, 128), fg_mbar_init(pempty, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (total > 0) {
    if (threadIdx.x == 0) {
      copy_tile(0);
      if (total > 1) copy_tile(1);
    }
    pl.template load_kv<BN, 256>(sK, (int64_t)b * p.hkv + hk, n0);
    fg_cp_async_commit();  // (wait_group counts committed groups only)
    fg_cp_async_wait<0>();
    fg_fence_async();
  }
  __syncthreads();  // K and V landed

  uint4* const pb = (uint4*)(fg_smem + (sP - sbase)) + tid;  // this thread's fragments: pb[128 k]
  if (wg0) {
    // K hi and V hi as A fragments (the byte layout of fg_wgmma_load_a's bfloat16 fragments: a
    // k step of 8 tf32 columns is 32 bytes as one of 16 bfloat16 columns), so that S^T and dP^T
    // read only their lo parts and B from shared memory.
    uint32_t kh[D / 8][4], vh[D / 8][4], kl[REG ? D / 8 : 1][4], vl[REG ? D / 8 : 1][4];
    fg_wgmma_load_a<BN, D / 8>(kh, sK, 16 * warp, lane);
    fg_wgmma_load_a<BN, D / 8>(vh, sV, 16 * warp, lane);
    if constexpr (REG) {  // and the lo parts (REG)
      fg_wgmma_load_a<BN, D / 8>(kl, sK + KH, 16 * warp, lane);
      fg_wgmma_load_a<BN, D / 8>(vl, sV + KH, 16 * warp, lane);
    }
    // chain issues chain c of query tile it's S^T (c < 4) or dP^T (c >= 4): 16 head columns.
    const auto chain = [&](float (&d)[NB][4], int c, int it) {
      const uint32_t bq = sS + (it & 1) * STAGE + (c < 4 ? 0 : 2) * TB;
      if constexpr (REG)
        fg_wgmma_tf32_x<BM, 2, true, true, 0, BM, true>(d, (c < 4 ? kh : vh) + 2 * (c % 4), (c < 4 ? kl : vl) + 2 * (c % 4), 0,
                                                        bq, bq + TB, 2 * (c % 4));
      else
        fg_wgmma_tf32_x<BM, 2, true, false, BN, BM, true>(d, (c < 4 ? kh : vh) + 2 * (c % 4), nullptr, (c < 4 ? sK : sV) + KH,
                                                          bq, bq + TB, 2 * (c % 4));
    };
    // ld waits for (L2, delta) of step it (copied by this warpgroup's cp.async) and starts step
    // it + 1's.
    const auto ld = [&](int it) {
      fg_cp_async_wait<0>();
      asm volatile("bar.sync 4, 128;\n" ::: "memory");  // (L2, delta) of step it landed
      copy_ld(it + 1);
    };
    // hand computes P^T and dS^T of step it from S^T and dP^T and hands them to warpgroup 1.
    const auto hand = [&](float (&s)[NB][4], float (&dp)[NB][4], int it) {
      const int m0 = walk.m0(it);
      fg_bwd_pds_t<false>(s, dp, sLD + (it & 1) * BM, 0, m0, n0, kr, t, klen, fg_dkdv_masked<BM, BN>(p, m0, n0, klen), sl2, scale, p);
      if constexpr (RAW) {  // P^T, dS^T as they are
        if (it > 0) fg_mbar_wait(pempty, (it - 1) & 1);  // warpgroup 1 has read step it - 1's
        fg_ws_put(pb, s, dp);
      } else {
        uint32_t f[4][NB][4];  // P^T hi, lo, dS^T hi, lo
        fg_exact_frags(s, f[0], f[1]);
        fg_exact_frags(dp, f[2], f[3]);
        if (it > 0) fg_mbar_wait(pempty, (it - 1) & 1);  // warpgroup 1 has read step it - 1's
#pragma unroll
        for (int k = 0; k < 16; ++k) pb[128 * k] = make_uint4(f[k / 4][k % 4][0], f[k / 4][k % 4][1], f[k / 4][k % 4][2], f[k / 4][k % 4][3]);
      }
      fg_mbar_arrive(pfull);
    };
    copy_ld(0);
    float tmp[2][NB][4];
    for (int it = 0; it < total; ++it) {
      ld(it);
      fg_mbar_wait(bars + 8 * (it & 1), (it >> 1) & 1);
      float s[NB][4], dp[NB][4];
      fg_exact_chains<false, 8>(s, dp, tmp, [&](float (&d)[NB][4], int c) { chain(d, c, it); });
      hand(s, dp, it);
    }
    return;
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  for (int it = 0; it < total; ++it) {
    const int sg = it & 1;
    const uint32_t st = sS + sg * STAGE;
    fg_mbar_wait(pfull, it & 1);  // step it's fragments are in the buffer
    uint32_t f[4][NB][4];  // P^T hi, lo, dS^T hi, lo
    if constexpr (RAW) {
      float x[2][NB][4];
      fg_ws_get(pb, x[0], 0);
      fg_ws_get(pb, x[1], NB);
      fg_mbar_arrive(pempty);
      fg_exact_frags(x[0], f[0], f[1]);
      fg_exact_frags(x[1], f[2], f[3]);
    } else {
#pragma unroll
      for (int k = 0; k < 16; ++k) {
        const uint4 x = pb[128 * k];
        f[k / 4][k % 4][0] = x.x, f[k / 4][k % 4][1] = x.y, f[k / 4][k % 4][2] = x.z, f[k / 4][k % 4][3] = x.w;
      }
      fg_mbar_arrive(pempty);
    }
    fg_mbar_wait(bars + 8 * sg, (it >> 1) & 1);  // (completed: warpgroup 0 waited) the stage's copies seen here
    float ot[2][OB][4];
    fg_exact_chains<true, 4>(dv, dk, ot, [&](float (&d)[OB][4], int c) {
      const uint32_t bt = st + (c < 2 ? 6 : 4) * TB;
      fg_wgmma_tf32_x<D, 2, true, true, 0, D, true>(d, f[c < 2 ? 0 : 2] + 2 * (c % 2), f[c < 2 ? 1 : 3] + 2 * (c % 2), 0, bt,
                                                    bt + TB, 2 * (c % 2));
    });
    asm volatile("bar.sync 1, 128;\n" ::: "memory");  // warpgroup 1 is done with the stage
    if (tid == 0 && it + 2 < total) copy_tile(it + 2);
  }
  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_wgmma_exact_dkdv_ws1: fg_attn_bwd_wgmma_exact_dkdv_ws<D, false, true> (two
// warpgroups, P^T and dS^T handed over as floats) with one stage of the query tile, for d = 128,
// where two stages (8 tiles [32][128], 128 KiB each) and K, V hi and lo (128 KiB) would not fit
// 227 KiB. The stage's halves are filled and released separately: the rows buffer R (Q hi, lo,
// dO hi, lo [32][D], copies 0-3 of copy_stage), which only warpgroup 0's S^T and dP^T read, and
// the columns buffer C (Q^T hi, lo, dO^T hi, lo [D][32], copies 4-7), which only warpgroup 1's
// dV and dK read, each with its full mbarrier (one arrival expecting 4 tiles' bytes, once per
// tile: parity it & 1). Once S^T and dP^T of tile it have completed in all of warpgroup 0
// (named barrier 2), its thread 0 copies R of tile it + 1, under warpgroup 0's exponentials and
// warpgroup 1's products; once dV and dK of tile it have completed in warpgroup 1 (named
// barrier 1), its thread 0 copies C of tile it + 1, under warpgroup 0's S^T and dP^T of tile
// it + 1. K hi and V hi live only in warpgroup 0's registers (A fragments, 64 each): they are
// copied first into C's place, read from there, and C's first copy starts after a block-wide
// barrier. K lo and V lo stay in shared memory (A of the lo·hi products).
// Warpgroup 1 adds dV and dK in column quarters of 32 (m64n32k8: B rows 32 q .. 32 q + 31 of a
// columns tile start 32 q x 128 bytes further; the chain temporaries are then 32 registers), P^T
// split first and dV's 8 chains run, then dS^T split and dK's 8 chains, so that one split pair is
// live; the order of the float32 sums is fg_attn_bwd_wgmma_exact_dkdv_ws's (each chain from zero,
// hi·hi last, chains added in order). (In halves of 64, m64n64k8, the kernel took 255 registers and
// spilled 1108 bytes, and its dK/dV ran 1.35-1.40x as long (results/h100-2026-11-24-s14, call C);
// in quarters it still spills 696 bytes (ptxas, call C), and passing the one-stage tiles' base
// addresses through an empty asm, so that their descriptors are not hoisted out of the loop, left
// 692 (call D).)
// Shared memory: K lo, V lo [64][D] (fg_sw128<64>), R, C, PB (16 KiB), (L2, delta) of two
// tiles, 4 mbarriers (R full, C full, PB full, PB empty): 209.5 KiB at d = 128.
// V selects the form (a sum of FgWs1): VS, V hi's columns D/2 .. D - 1 in shared memory (16 KiB
// more, 225.5 KiB; warpgroup 1 copies them there from C's place), read by dP^T's last 4 chains
// as A (fg_wgmma_tf32_ss3), so that warpgroup 0 holds 32 registers of V hi, not 64; W1,
// warpgroup 1's chains one in flight (fg_exact_chains' DEPTH 1: 16 registers fewer). With both
// (the default) ptxas spills 252 bytes instead of 696 and dK/dV takes 0.74-0.83 of the plain
// form's time on the H100 (results/h100-2026-11-24-s14, call x128s-2; warpgroup 0's chains one
// in flight, and warpgroup 1 splitting its A fragments 16 queries at a time, were measured
// there and were no better). The sums are the same in every form.
enum FgWs1 : int { FG_WS1_W1 = 1, FG_WS1_VS = 2 };
template <int D, int V> __device__ void fg_attn_bwd_wgmma_exact_dkdv_ws1(const fg_mma_prep_params& pp) {
  using P = FgTf32Planes<D>;
  constexpr int BN = 64, BM = P::T, NB = BM / 8, QB = 32 / 8;  // QB: blocks of a column quarter
  constexpr bool VS = V & FG_WS1_VS;
  constexpr int VK = VS ? D / 16 : D / 8;  // V hi's k steps in registers
  constexpr uint32_t TB = P::TB, KH = BN * D * 4, HALF = 4 * TB, PB = 8 * 128 * 16, VH = VS ? KH / 2 : 0;
  constexpr unsigned SMEM = 2 * KH + 2 * HALF + PB + VH + 2 * BM * 8 + 32 + 1024;
  static_assert(D == 128, "d = 128 only (d = 64 has fg_attn_bwd_wgmma_exact_dkdv_ws)");
  static_assert(2 * KH <= HALF, "K hi and V hi are first copied into C's place");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sKl = (sbase + 1023) & ~1023u, sVl = sKl + KH, sR = sKl + 2 * KH, sC = sR + HALF, sP = sC + HALF;
  const uint32_t sVh = sP + PB;                                     // (VS) V hi's blocks of 32 columns D/64 .. D/32 - 1
  float2* const sLD = (float2*)(fg_smem + (sVh + VH - sbase));  // tile it's rows at sLD + BM (it % 2)
  const uint32_t bars = sVh + VH + 2 * BM * 8;                    // R full, C full, PB full, PB empty
  const uint32_t rfull = bars, cfull = bars + 8, pfull = bars + 16, pempty = bars + 24;
  const P pl(p, pp.dst);

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const bool wg0 = threadIdx.x < 128;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, p.h / p.hkv);
  const int klen = walk.klen, total = walk.total;
  const int kr = 16 * warp + g;  // this lane's keys n0 + kr, + 8
  // copy_half copies one half (COLS: the columns into C, else the rows into R) of step it's
  // query tile (one thread).
  const auto copy_half = [&](bool cols, int it) {
    const int64_t bh = (int64_t)b * p.h + walk.hq(it);
    if (cols)
      pl.template copy_half<true>(sC, cfull, bh, walk.m0(it) / BM);
    else
      pl.template copy_half<false>(sR, rfull, bh, walk.m0(it) / BM);
  };
  if (threadIdx.x == 0) {
    fg_mbar_init(rfull, 1), fg_mbar_init(cfull, 1), fg_mbar_init(pfull, 128), fg_mbar_init(pempty, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  uint32_t kh[D / 8][4], vh[VK][4];
  if (total > 0) {
    if (threadIdx.x == 0) copy_half(false, 0);
    pl.template load_kv<BN, 256>(sC, sKl, sC + KH, sVl, (int64_t)b * p.hkv + hk, n0);  // K hi, V hi into C's place
    fg_cp_async_commit();
    fg_cp_async_wait<0>();
    fg_fence_async();
    __syncthreads();  // K and V landed
    if (wg0) {
      fg_wgmma_load_a<BN, D / 8>(kh, sC, 16 * warp, lane);
      fg_wgmma_load_a<BN, VK>(vh, sC + KH, 16 * warp, lane);
    } else if constexpr (VS) {  // V hi's second half (its last KH / 2 bytes) to sVh
      for (int i = tid; i < (int)(VH / 16); i += 128)
        fg_st_shared16(sVh + 16 * i, *(const uint4*)(fg_smem + (sC + KH + VH + 16 * i - sbase)));
    }
    fg_fence_async();  // (the reads of C's place before the bulk copy's writes; VS: sVh's writes before wgmma's reads)
    __syncthreads();
    if (threadIdx.x == 0) copy_half(true, 0);
  }

  uint4* const pb = (uint4*)(fg_smem + (sP - sbase)) + tid;  // this thread's floats: pb[128 k]
  if (wg0) {
    const auto copy_ld = [&](int it) { fg_dkdv_copy_ld(sLD, p, b, walk, it); };
    copy_ld(0);
    float tmp[2][NB][4];
    for (int it = 0; it < total; ++it) {
      fg_cp_async_wait<0>();
      asm volatile("bar.sync 4, 128;\n" ::: "memory");  // (L2, delta) of step it landed
      copy_ld(it + 1);
      fg_mbar_wait(rfull, it & 1);
      // S^T = K Q^T (chains 0-7), dP^T = V dO^T (8-15), 16 head columns each.
      float s[NB][4], dp[NB][4];
      fg_exact_chains<false, 2 * D / 16>(s, dp, tmp, [&](float (&d)[NB][4], int c) {
        constexpr int C = D / 16;
        const uint32_t bq = sR + (c < C ? 0 : 2) * TB;
        if (VS && c >= C + C / 2)  // V hi's k steps from D/16 on in shared memory (sVh holds its blocks from D/64 on)
          fg_wgmma_tf32_ss3<BM, 2, BN, BM>(d, sVh - VH, sVl, bq, bq + TB, 2 * (c % C));
        else
          fg_wgmma_tf32_x<BM, 2, true, false, BN, BM, true>(d, (c < C ? kh : vh) + 2 * (c % C), nullptr, c < C ? sKl : sVl, bq,
                                                            bq + TB, 2 * (c % C));
      });
      asm volatile("bar.sync 2, 128;\n" ::: "memory");  // warpgroup 0 is done with R
      if (threadIdx.x == 0 && it + 1 < total) copy_half(false, it + 1);
      const int m0 = walk.m0(it);
      fg_bwd_pds_t<false>(s, dp, sLD + (it & 1) * BM, 0, m0, n0, kr, t, klen, fg_dkdv_masked<BM, BN>(p, m0, n0, klen), sl2, scale, p);
      if (it > 0) fg_mbar_wait(pempty, (it - 1) & 1);  // warpgroup 1 has read step it - 1's
      fg_ws_put(pb, s, dp);
      fg_mbar_arrive(pfull);
    }
    return;
  }

  float dk[4][QB][4], dv[4][QB][4];  // column quarters
#pragma unroll
  for (int q = 0; q < 4; ++q) fg_bwd_zero(dk[q]), fg_bwd_zero(dv[q]);
  for (int it = 0; it < total; ++it) {
    fg_mbar_wait(pfull, it & 1);  // step it's floats are in the buffer
    float x[NB][4];
    uint32_t fh[NB][4], fl[NB][4];
    float ot[2][QB][4];
    // acc adds A B into the column quarters 2 h and 2 h + 1 of x (chains 0, 1 and 2, 3: 16
    // queries each), B the columns tile at bt (quarter q's rows start q 32 x 128 bytes further).
    const auto acc = [&](float (&x)[4][QB][4], uint32_t bt, int h) {
      fg_exact_chains<true, 4, V & FG_WS1_W1 ? 1 : 2>(x[2 * h], x[2 * h + 1], ot, [&](float (&d)[QB][4], int c) {
        const uint32_t bq = bt + (2 * h + c / 2) * 32 * 128;
        fg_wgmma_tf32_x<32, 2, true, true, 0, D, true>(d, fh + 2 * (c % 2), fl + 2 * (c % 2), 0, bq, bq + TB, 2 * (c % 2));
      });
    };
    fg_ws_get(pb, x, 0);  // P^T
    fg_exact_frags(x, fh, fl);
    fg_mbar_wait(cfull, it & 1);
    acc(dv, sC + 2 * TB, 0), acc(dv, sC + 2 * TB, 1);  // dV += P^T dO; B dO^T
    fg_ws_get(pb, x, NB);                              // dS^T
    fg_mbar_arrive(pempty);
    fg_exact_frags(x, fh, fl);
    acc(dk, sC, 0), acc(dk, sC, 1);  // dK += dS^T Q; B Q^T
    asm volatile("bar.sync 1, 128;\n" ::: "memory");  // warpgroup 1 is done with C
    if (tid == 0 && it + 1 < total) copy_half(true, it + 1);
  }
  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, reinterpret_cast<float(&)[D / 8][4]>(dk), kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, reinterpret_cast<float(&)[D / 8][4]>(dv), kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_wgmma_exact_dq: grid (ceil(Nq / 128), H, B), 384 threads (two consumer warpgroups
// and a producer warpgroup whose registers go to the consumers by setmaxnreg); pp.src the
// problem, pp.dst the pre-pass's planes. Shared memory: Q lo, dO lo [128][D] (fg_sw128<128>;
// Q hi and dO hi are A fragments in registers), two ring stages of a key tile (K hi, lo, V hi, lo [32][D]; K^T hi, lo
// [D][32]), the full (6 copies) and empty (256 consumers) mbarriers of each stage.
template <int D> __device__ void fg_attn_bwd_wgmma_exact_dq(const fg_mma_prep_params& pp) {
  using P = FgTf32Planes<D>;
  constexpr int BM = 128, BN = P::T, NB = BN / 8, OB = D / 8, KS = D / 8, CONSUMERS = 256;  // KS: Q's k steps
  constexpr uint32_t TB = P::TB, QB = BM * D * 4, STAGE = 6 * TB;
  constexpr unsigned SMEM = 2 * QB + 2 * STAGE + 32 + 1024;
  static_assert(D == 64, "d = 64 only: shared memory");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sQl = ((uint32_t)__cvta_generic_to_shared(fg_smem) + 1023) & ~1023u;
  const uint32_t sDl = sQl + QB, sR = sDl + QB, bars = sR + 2 * STAGE;  // full [2], empty [2]
  const P pl(p, pp.dst);
  const FgItem blk = FgItem::block(p, BM, BN);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  if (threadIdx.x == 0) {
    fg_mbar_init(bars, 6), fg_mbar_init(bars + 8, 6);
    fg_mbar_init(bars + 16, CONSUMERS), fg_mbar_init(bars + 24, CONSUMERS);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (warp >= 8) {  // the producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (warp != 8 || lane != 0) return;
    const int64_t bh = (int64_t)blk.b * p.hkv + blk.hk;
    for (int j = 0; j < blk.tiles; ++j) {
      const int sg = j & 1;
      if (j >= 2) fg_mbar_wait(bars + 16 + 8 * sg, ((j >> 1) - 1) & 1);  // the consumers released tile j - 2
      const uint32_t st = sR + sg * STAGE, bar = bars + 8 * sg;
#pragma unroll
      for (int u = 0; u < 6; ++u)  // K hi, lo, V hi, lo (by rows), K hi, lo (by columns)
        fg_bulk_load(st + u * TB, pl.key_tile(u, bh, j), TB, bar);
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const int m0 = blk.m0, h = blk.h, b = blk.b;
  float dq[OB][4];
  fg_bwd_zero(dq);
  if (blk.tiles > 0) {
    // Q lo and dO lo into shared memory, Q hi and dO hi as A fragments (rows r0, r0 + 8 of the
    // warp, columns 8 kk + t, + 4); then the warpgroup's writes fenced for the async proxy.
    const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
    const float* dout = (const float*)p.do_ + b * p.o_batch + h * p.o_head;
    fg_exact_put_split<D, BM, false>(0, sQl, q, p.q_row, m0, p.nq);
    fg_exact_put_split<D, BM, false>(0, sDl, dout, p.o_row, m0, p.nq);
    uint32_t qh[KS][4], doh[KS][4];
    const int r0 = m0 + 16 * warp + g;
    fg_exact_load_hi(qh, q, p.q_row, r0, p.nq, t);
    fg_exact_load_hi(doh, dout, p.o_row, r0, p.nq, t);
    fg_fence_async();
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");

    const FgDqRows rows(p, b, h, r0, t);
    const uint32_t qlw = sQl + wg * 64 * 128, dlw = sDl + wg * 64 * 128;
    for (int j = 0; j < blk.tiles; ++j) {
      const int sg = j & 1;
      const uint32_t kt = sR + sg * STAGE;  // K hi, lo, V hi, lo, K^T hi, lo: TB apart
      fg_mbar_wait(bars + 8 * sg, (j >> 1) & 1);
      float s[NB][4], dp[NB][4], tmp[2][NB][4];
      // S = Q K^T (chains 0-3), dP = dO V^T (4-7), 16 head columns each.
      fg_exact_chains<false, 8>(s, dp, tmp, [&](float (&d)[NB][4], int c) {
        if (c < 4)
          fg_wgmma_tf32_x<BN, 2, true, false, BM, BN, true>(d, qh + 2 * c, nullptr, qlw, kt, kt + TB, 2 * c);
        else
          fg_wgmma_tf32_x<BN, 2, true, false, BM, BN, true>(d, doh + 2 * (c - 4), nullptr, dlw, kt + 2 * TB, kt + 3 * TB, 2 * (c - 4));
      });
      rows.ds<false>(s, dp, j * BN, sl2, scale);  // dS in dp
      uint32_t dh[NB][4], dl[NB][4];
      fg_exact_frags(dp, dh, dl);
      // dQ += dS K: two chains of 16 keys, B = K^T [D][32].
      float ot[2][OB][4];
      fg_exact_chains<true, 2>(dq, dq, ot, [&](float (&d)[OB][4], int c) {
        fg_wgmma_tf32_x<D, 2, true, true, 0, D, true>(d, dh + 2 * c, dl + 2 * c, 0, kt + 4 * TB, kt + 5 * TB, 2 * c);
      });
      fg_mbar_arrive(bars + 16 + 8 * sg);
    }
  }
  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, 16 * warp + g, p.nq - m0, p.nq - m0, t);
}

// fg_attn_bwd_wgmma_exact_dq1: the dQ kernel at d = 128, where fg_attn_bwd_wgmma_exact_dq's tiles
// do not fit: grid (ceil(Nq / 64), H, B), one warpgroup of 64 query rows (128 threads; thread 0
// issues the bulk copies, as fg_attn_bwd_wgmma_exact_dkdv_ws1); pp.src the problem, pp.dst the
// pre-pass's planes. QREG: Q hi as A fragments in registers (64 of them), Q lo, dO hi, dO lo [64][D]
// in shared memory (fg_sw128<64>, split from the float32 inputs); else Q hi there too (A of S
// from shared memory, as dP's); one stage of the key tile of 32 in two halves
// with their own full mbarriers: R = K hi, lo, V hi, lo by rows (read by S and dP), refilled for
// tile j + 1 as soon as S and dP of tile j completed, and C = K^T hi, lo (read by dQ += dS K),
// refilled once dQ's chains completed. 192 KiB (224 without QREG) + 1 KiB alignment.
//   S = Q K^T, dP = dO V^T          wgmma m64n32k8, 16 chains of 16 head columns (dP, and S
//                                   without QREG: A and B from shared memory, fg_wgmma_tf32_ss3)
//   dS = scale P (dP - delta)        (FgDqRows.ds)
//   dQ += dS K                       wgmma m64nWk8 in column parts of W, A = dS split in
//                                    registers, B = K^T [D][32]; W = 64 (halves), with QREG 32
//                                    (quarters: its chain temporaries take 32 registers, not 64,
//                                    beside Q hi's 64)
// The sums in fg_attn_bwd_wgmma_exact_dq's order (each chain from zero, hi·hi last, the chains
// of 16 keys added to dQ in float32 in order).
template <int D, bool QREG> __device__ void fg_attn_bwd_wgmma_exact_dq1(const fg_mma_prep_params& pp) {
  using P = FgTf32Planes<D>;
  constexpr int BM = 64, BN = P::T, NB = BN / 8, KS = D / 8;
  constexpr int W = QREG ? 32 : 64, NP = D / W, WB = W / 8;  // dQ's column parts: NP of W columns, WB blocks
  constexpr uint32_t TB = P::TB, QB = BM * D * 4;
  constexpr unsigned SMEM = (QREG ? 3 : 4) * QB + 6 * TB + 16 + 1024;
  static_assert(D == 128, "d = 128 only (d = 64 has fg_attn_bwd_wgmma_exact_dq)");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sQl = ((uint32_t)__cvta_generic_to_shared(fg_smem) + 1023) & ~1023u;
  const uint32_t sDh = sQl + QB, sDl = sDh + QB, sQh = sDl + QB, sR = sQh + (QREG ? 0 : QB), sC = sR + 4 * TB;
  const uint32_t rfull = sC + 2 * TB, cfull = rfull + 8;
  const P pl(p, pp.dst);
  const FgItem blk = FgItem::block(p, BM, BN);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t bhk = (int64_t)blk.b * p.hkv + blk.hk;
  // copy_half starts the copies of key tile j's rows (R: 4 tiles) or columns (C: 2), one thread.
  const auto copy_half = [&](bool cols, int j) {
    const uint32_t bar = cols ? cfull : rfull, st = cols ? sC : sR;
    const int u0 = cols ? 4 : 0, n = cols ? 2 : 4;
    fg_mbar_expect(bar, n * TB);
    for (int u = 0; u < n; ++u) fg_bulk_copy(st + u * TB, pl.key_tile(u0 + u, bhk, j), TB, bar);
  };
  if (threadIdx.x == 0) {
    fg_mbar_init(rfull, 1), fg_mbar_init(cfull, 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const int m0 = blk.m0, h = blk.h, b = blk.b;
  float dq[NP][WB][4];  // column parts
#pragma unroll
  for (int u = 0; u < NP; ++u) fg_bwd_zero(dq[u]);
  if (blk.tiles > 0) {
    if (threadIdx.x == 0) copy_half(false, 0), copy_half(true, 0);
    // Q lo (and without QREG Q hi), dO hi and lo into shared memory, QREG: Q hi as A fragments
    // (rows r0, r0 + 8 of the warp, columns 8 kk + t, + 4); then the writes fenced for the async
    // proxy.
    const float* q = (const float*)p.q + b * p.q_batch + h * p.q_head;
    const float* dout = (const float*)p.do_ + b * p.o_batch + h * p.o_head;
    fg_exact_put_split<D, BM, !QREG>(sQh, sQl, q, p.q_row, m0, p.nq);
    fg_exact_put_split<D, BM, true>(sDh, sDl, dout, p.o_row, m0, p.nq);
    uint32_t qh[QREG ? KS : 1][4];
    const int r0 = m0 + 16 * warp + g;
    if constexpr (QREG) fg_exact_load_hi(qh, q, p.q_row, r0, p.nq, t);
    fg_fence_async();
    __syncthreads();

    const FgDqRows rows(p, b, h, r0, t);
    for (int j = 0; j < blk.tiles; ++j) {
      fg_mbar_wait(rfull, j & 1);
      float s[NB][4], dp[NB][4];
      {
        float tmp[2][NB][4];
        // S = Q K^T (chains 0-7), dP = dO V^T (8-15), 16 head columns each.
        fg_exact_chains<false, 2 * D / 16>(s, dp, tmp, [&](float (&d)[NB][4], int c) {
          constexpr int C = D / 16;
          if (c < C && QREG)
            fg_wgmma_tf32_x<BN, 2, true, false, BM, BN, true>(d, qh + 2 * c, nullptr, sQl, sR, sR + TB, 2 * c);
          else if (c < C)
            fg_wgmma_tf32_ss3<BN, 2, BM, BN>(d, sQh, sQl, sR, sR + TB, 2 * c);
          else
            fg_wgmma_tf32_ss3<BN, 2, BM, BN>(d, sDh, sDl, sR + 2 * TB, sR + 3 * TB, 2 * (c - C));
        });
      }
      asm volatile("bar.sync 1, 128;\n" ::: "memory");  // every warp is done with R
      if (threadIdx.x == 0 && j + 1 < blk.tiles) copy_half(false, j + 1);
      rows.ds<false>(s, dp, j * BN, sl2, scale);  // dS in dp
      uint32_t dh[NB][4], dl[NB][4];
      fg_exact_frags(dp, dh, dl);
      fg_mbar_wait(cfull, j & 1);
      // dQ += dS K, two column parts at a time: chains 0, 1 part u, 2, 3 part u + 1, 16 keys
      // each; B = K^T [D][32], part u's rows from u W on.
      float ot[2][WB][4];
#pragma unroll
      for (int u = 0; u < NP; u += 2)
        fg_exact_chains<true, 4>(dq[u], dq[u + 1], ot, [&](float (&d)[WB][4], int c) {
          const uint32_t bt = sC + (u + c / 2) * W * 128;
          fg_wgmma_tf32_x<W, 2, true, true, 0, D, true>(d, dh + 2 * (c % 2), dl + 2 * (c % 2), 0, bt, bt + TB, 2 * (c % 2));
        });
      asm volatile("bar.sync 1, 128;\n" ::: "memory");  // every warp is done with C
      if (threadIdx.x == 0 && j + 1 < blk.tiles) copy_half(true, j + 1);
    }
  }
  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, reinterpret_cast<float(&)[D / 8][4]>(dq), 16 * warp + g, p.nq - m0,
                  p.nq - m0, t);
}

// ---- entry points (names built by cuda/attention_mma_bwd.go's mmaBwdCfg.name and
// exactBwdPrep) ----------------------------------------------------------------------------------

#define FG_BWD_EXACT_PREP(D)                                                                           \
  extern "C" __global__ void __launch_bounds__(256) fg_attn_bwd_exact_prep_d##D(const fg_mma_prep_params pp) { \
    fg_attn_bwd_exact_prep<D>(pp);                                                                     \
  }
// d = 64: the pre-pass, five dK/dV kernels and the dQ kernel.
#define FG_BWD_WGMMA_EXACT(D)                                                                          \
  FG_BWD_EXACT_PREP(D)                                                                                 \
  extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)                         \
      fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32_cl(const fg_mma_prep_params pp) {                    \
    fg_attn_bwd_wgmma_exact_dkdv<D, true>(pp);                                                         \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(128, 1) fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32(        \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dkdv<D, false>(pp);                                                        \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(256, 1) fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32_ws(     \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dkdv_ws<D, false, false>(pp);                                              \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(256, 1) fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32_ws_raw( \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dkdv_ws<D, false, true>(pp);                                               \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(256, 1) fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32_reg_ws_raw( \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dkdv_ws<D, true, true>(pp);                                                \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(384, 1) fg_attn_bwd_wgmma_dq_exact_d##D##_m128_n32(         \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dq<D>(pp);                                                                 \
  }
FG_BWD_WGMMA_EXACT(64)
// d = 128: the pre-pass, the one-stage dK/dV kernel (its forms: plain, _vs, _vsw1; FgWs1) and
// the one-warpgroup dQ kernel (Q hi in registers, _reg, or in
// shared memory).
#define FG_BWD_WGMMA_EXACT_WS1(D, SFX, V)                                                              \
  extern "C" __global__ void __launch_bounds__(256, 1) fg_attn_bwd_wgmma_dkdv_exact_d##D##_n64_m32_ws_raw_one##SFX( \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dkdv_ws1<D, V>(pp);                                                        \
  }
#define FG_BWD_WGMMA_EXACT_ONE(D)                                                                      \
  FG_BWD_EXACT_PREP(D)                                                                                 \
  FG_BWD_WGMMA_EXACT_WS1(D, , 0)                                                                       \
  FG_BWD_WGMMA_EXACT_WS1(D, _vs, FG_WS1_VS)                                                            \
  FG_BWD_WGMMA_EXACT_WS1(D, _vsw1, FG_WS1_VS + FG_WS1_W1)                                              \
  extern "C" __global__ void __launch_bounds__(128, 1) fg_attn_bwd_wgmma_dq_exact_d##D##_m64_n32_reg_one(  \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dq1<D, true>(pp);                                                          \
  }                                                                                                    \
  extern "C" __global__ void __launch_bounds__(128, 1) fg_attn_bwd_wgmma_dq_exact_d##D##_m64_n32_one(      \
      const fg_mma_prep_params pp) {                                                                   \
    fg_attn_bwd_wgmma_exact_dq1<D, false>(pp);                                                         \
  }
FG_BWD_WGMMA_EXACT_ONE(128)
