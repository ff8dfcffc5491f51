// attention_hopper_exact.cu: variants 24 and 25 of the forward, Precisions Exact and TF32 on
// Hopper (sm_90a): the 3xTF32 (and TF32) products of attention_mma.cu's variant 11 on wgmma, fed
// like the bfloat16 bulk kernels (attention_hopper_bulk.cu: a pre-pass writes K and V tile by
// tile in the shared-memory layout, a producer moves each tile with one bulk copy into a
// two-stage ring, mbarriers count the bytes and the consumers); variant 25 in a persistent grid
// (the schedule of attention_hopper_persist.cu). A module of its own, so that its PTX cannot
// stop the other Hopper kernels from loading.
//
// The problem, masks, softmax and outputs are attention_mma.cu's (its header states them), and
// so is the precision: for Exact every operand x is split as hi = tf32(x), lo = tf32(x - hi),
// and a b = a_lo b_hi + a_hi b_lo + a_hi b_hi; TF32 takes the one product of the hi parts. The
// tensor cores add into their float32 accumulator truncating (attention_mma.cu,
// "Accumulation"), so Exact, as there, runs each chain of products over 16 head columns (S) or
// 16 keys (O) only, from a zero accumulator, and adds the chains in float32 with rounding to
// nearest, in order (chains of 32 were 1-2% faster and reached twice a plain float32 loop's
// error: cuda/results/h100-2026-11-24-s11, call H).
//
// TF32 wgmma reads both operands K-major (along the sum's index), so the pre-pass writes V
// transposed. A block of two consumer warpgroups (64 query rows each) and a producer warpgroup
// owns BM = 128 query rows of one (b, h) at a time; per key tile of BN keys (Exact: 64 at
// d = 64, 32 at d = 128, where Q lo and the ring's two stages must fit 227 KiB; TF32: 128, 64):
//   S = Q K_j^T   wgmma m64nBNk8 tf32: Q hi from registers (each thread's fragments, loaded
//                 once a query tile), Q lo from shared memory, K hi and lo tiles [BN][D] from
//                 the ring; Exact in chains of 2 k steps (16 head columns)
//   online softmax (FgRows; Exact: exp2f, no flush; row sums in double), P split into hi and lo
//   O += P V_j    A = P from registers, B = V^T hi and lo tiles [D][BN]; Exact: wgmma m64n64k8
//                 per 64 columns of O in chains of 16 keys; TF32: m64nDk8 into O in place
// Exact keeps two chains in flight: chain c runs while chain c - 1's sum is added.
// The accumulator layout of m64nN gives lane (g, t) the keys 8 j + 2 t and 8 j + 2 t + 1 of
// every 8-key block j, which tf32's A fragment takes as k t and t + 4; so within each 8-key
// group the pre-pass orders V^T's keys as 0, 2, 4, 6, 1, 3, 5, 7 (position p holds key
// fg_exact_key(p)), and P's registers are A's as they are.
//
// Shared memory: Q lo [BM][D] (Exact), the ring's K [2][hi, lo][BN][D] and V^T [2][hi, lo][D][BN]
// float32 (TF32: hi only; tiles in wgmma's 128-byte swizzle, fg_sw128 with 16-byte chunks of 4
// floats: blocks of 32 columns), its 8 mbarriers.
#include "wgmma.cuh"

// FgExactTile is one tile of the pre-pass's planes (below): tile j0 / BN of key head (b, hk),
// its K tile [BN][D] and its V^T tile [D][BN], each the hi part and (SPLIT) the lo part, in
// 16-byte chunks w < CHUNKS of each: of K (isv false), key w / CH, columns 4 (w % CH) .. + 3;
// of V^T (isv), four lanes the four chunks 4 c4 .. 4 c4 + 3 of a column, which the swizzle
// keeps in one aligned 64-byte piece, and eight such groups the consecutive columns a warp
// reads from a key's row of V. The standalone pre-pass and variant 26's converters both move
// every chunk with load and put, so they write the same bits.
template <int D, int BN, bool SPLIT> struct FgExactTile {
  static constexpr int CH = D / 4, CHUNKS = BN * CH;             // chunks of a part of K (or V^T)
  static constexpr uint32_t TB = (SPLIT ? 2 : 1) * BN * D * 4;  // bytes of a tile (hi, lo)
  const float *k, *v;  // the key head's K and V
  int64_t k_row, v_row;
  int j0, klen;  // the tile's first key; keys at or past klen are zeros, never read

  // The tile `tile` = (b Hkv + hk) NT + j of a plane of NT tiles a key head.
  __device__ __forceinline__ FgExactTile(const fg_attn_params& p, int64_t tile, int NT) {
    const int hk = (int)(tile / NT % p.hkv), b = (int)(tile / NT / p.hkv);
    const int32_t* kl = (const int32_t*)p.key_lengths;
    k = (const float*)p.k + b * p.k_batch + hk * p.k_head, v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
    k_row = p.k_row, v_row = p.v_row;
    j0 = (int)(tile % NT) * BN, klen = kl ? min(p.nk, kl[b]) : p.nk;
  }
  // load returns chunk w of K (V^T with isv) as four floats (0 past the key length).
  __device__ __forceinline__ float4 load(bool isv, int w) const {
    if (!isv) {  // K: key r, columns 4 c .. 4 c + 3
      const int r = w / CH, c = w % CH;
      return j0 + r < klen ? *(const float4*)(k + (int64_t)(j0 + r) * k_row + 4 * c) : make_float4(0, 0, 0, 0);
    }
    // V^T: column n, positions 4 c .. 4 c + 3 of the row of keys (fg_exact_key's order)
    const int n = (w / 4) % D, c = 4 * (w / (4 * D)) + w % 4;
    float e[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int pos = 4 * c + q, key = j0 + (pos & ~7) + fg_exact_key(pos & 7);
      e[q] = key < klen ? v[(int64_t)key * v_row + n] : 0.f;
    }
    return make_float4(e[0], e[1], e[2], e[3]);
  }
  // put writes x, chunk w of K (V^T with isv), rounded to tf32 (SPLIT: split into hi and lo)
  // into the tile whose K is at kt and V^T at vt, each in fg_sw128's layout.
  static __device__ __forceinline__ void put(char* kt, char* vt, bool isv, int w, float4 x) {
    // the byte offset in the hi part of the tile
    const uint32_t at = isv ? fg_sw128<D>((w / 4) % D, 4 * (w / (4 * D)) + w % 4) : fg_sw128<BN>(w / CH, w % CH);
    uint4 hi, lo;
    fg_split4(x, hi, lo);
    char* const t = isv ? vt : kt;
    *(uint4*)(t + at) = hi;
    if (SPLIT) *(uint4*)(t + TB / 2 + at) = lo;
  }
};

// fg_attn_hopper_prep_exact: the pre-pass of variants 24 and 25 (Go: startMMA). dst holds two
// planes, K then V^T, each [B][Hkv][NT][hi, lo][BN x D] float32 (SPLIT, Exact; TF32: the hi
// part only, x rounded to tf32) with NT = ceil(Nk / BN): K's tiles as [BN][D], V's transposed
// as [D][BN] with the keys of every group of 8 in fg_exact_key's order, each in fg_sw128's
// layout; keys at or past Nk or the batch's key length are written as zeros without a read (a
// tile copy moves whole tiles; zeros keep 0 x V finite). One thread per 16-byte chunk
// (FgExactTile), grid-stride: every tile's K chunks, then every tile's V^T chunks (a warp
// writes whole 128-byte rows of K, aligned 64-byte pieces of V^T).
template <int D, int BN, bool SPLIT> __device__ void fg_attn_hopper_prep_exact(const fg_mma_prep_params& pp) {
  using X = FgExactTile<D, BN, SPLIT>;
  const fg_attn_params& p = pp.src;
  if (p.d != D) __trap();
  const int NT = (p.nk + BN - 1) / BN;
  const int64_t tiles = (int64_t)p.b * p.hkv * NT, chunks = tiles * X::CHUNKS;  // chunks of a plane
  char* const kplane = (char*)pp.dst;
  char* const vplane = kplane + tiles * X::TB;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < 2 * chunks; i += (int64_t)gridDim.x * blockDim.x) {
    const bool isv = i >= chunks;
    const int64_t u = isv ? i - chunks : i, tile = u / X::CHUNKS;
    const int w = (int)(u % X::CHUNKS);
    X::put(kplane + tile * X::TB, vplane + tile * X::TB, isv, w, X(p, tile, NT).load(isv, w));
  }
}

// FgExact holds the constants of variants 24 and 25 for head dimension D, key tile BN and
// SPLIT (Exact; TF32 without): D = 64 with BN = 64, D = 128 with BN = 32 for Exact (Q lo and
// the ring's two stages in 227 KiB: S's products m64nBNk8, P V's m64n64k8 on each 64 columns of
// O, in chains); TF32, one product each on tf32-rounded operands (no Q lo, tiles of the hi part
// only), accumulated in place as attention_mma.cu's TF32 (the operands' rounding is 1000 times
// the accumulation's error): S m64nBNk8, P V m64nDk8, BN = 128 or 64.
template <int D, int BN, bool SPLIT> struct FgExact {
  static_assert(D % 64 == 0 && BN % 16 == 0 && (SPLIT ? BN == 32 || BN == 64 : BN == 64 || BN == 128), "tile sizes");
  static constexpr int NWG = 2, BM = 64 * NWG, CONSUMERS = 128 * NWG;
  static constexpr int NB = BN / 8, OB = D / 8, KS = D / 8, CH = D / 4;
  static constexpr int SC = KS / 2;               // S's chains: 2 k steps (16 head columns) each
  static constexpr int OC = BN / 16 * (D / 64);   // O's chains: 16 keys by 64 columns of O each
  static constexpr uint32_t QLB = SPLIT ? BM * D * 4 : 0;     // Q lo
  static constexpr uint32_t HALF = BN * D * 4;                // a tile's hi (or lo) part
  static constexpr uint32_t KB = (SPLIT ? 2 : 1) * HALF;      // a tile
  static constexpr unsigned SMEM = QLB + 4 * KB + 64 + 1024;  // Q lo, the ring, its mbarriers, alignment

  // load_q writes this warpgroup's 64 rows of the query tile at m0 of q (rows at or past Nq
  // zero): lo into Q lo at sQl (K-major, swizzled; SPLIT), hi as each thread's A fragments qh
  // (rows r0, r0 + 8 of the warp; columns 8 kk + t, 8 kk + t + 4); then fences the writes for
  // the async proxy and syncs the warpgroup (its products read only its own rows).
  static __device__ __forceinline__ void load_q(uint32_t (&qh)[KS][4], uint32_t sQl, const fg_attn_params& p,
                                                const float* q, int m0) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
    if constexpr (SPLIT) fg_exact_put_split<D, BM, false>(0, sQl, q, p.q_row, m0, p.nq);
    fg_exact_load_hi(qh, q, p.q_row, m0 + 16 * warp + g, p.nq, t);
    fg_fence_async();
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
  }

  // run_tiles runs key tiles it .. it + tiles - 1 of the ring (tiles >= 1, the first at key 0) for
  // this warpgroup's rows: S = Q K_j^T, online softmax, O += P V_j, each stage released when
  // its products have completed.
  static __device__ __forceinline__ void run_tiles(FgRows<OB>& rows, uint32_t (&qh)[KS][4], uint32_t sQl,
                                                   const FgRing& ring, int it, int tiles, float sl2) {
    if constexpr (!SPLIT) {  // TF32: S = Q K_j^T, softmax, O += P V_j, in place
      float s[NB][4];
      uint32_t pa[NB][4];
      for (int j = 0; j < tiles; ++j) {
        const int sg = (it + j) & 1, par = ((it + j) >> 1) & 1;
        fg_mbar_wait(ring.fullK(sg), par);
        fg_wgmma_fence();
        fg_wgmma_tf32_x<BN, KS, false, true, 64, BN>(s, qh, nullptr, 0, ring.sK + sg * KB, 0, 0);
        fg_wgmma_commit();
        fg_wgmma_wait<0>();
        fg_reg_fence(s);
        fg_mbar_arrive(ring.emptyK(sg));
        float alpha[2];
        rows.template probs<true, false>(s, j * BN, sl2, alpha);  // exp2 flushed below 2^-126, as variant 11's TF32
        rows.rescale(alpha);
#pragma unroll
        for (int kk = 0; kk < NB; ++kk)  // keys 8 kk + 2 t, + 1 as k t, t + 4 (V^T's order)
          pa[kk][0] = fg_tf32(s[kk][0]), pa[kk][1] = fg_tf32(s[kk][2]), pa[kk][2] = fg_tf32(s[kk][1]), pa[kk][3] = fg_tf32(s[kk][3]);
        fg_mbar_wait(ring.fullV(sg), par);
        fg_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < NB; ++kk)
          FgWgmmaTf32<D>::rs(rows.o, pa[kk], fg_wgmma_desc(ring.sV + sg * KB + fg_tf32_kstep<D>(kk), 16, 1024), 1);
        fg_wgmma_commit();
        fg_wgmma_wait<0>();
        fg_reg_fence(rows.o);
        fg_mbar_arrive(ring.emptyV(sg));
      }
    } else {  // Exact
      // The chains run two deep: chain c into its accumulator while chain c - 1 completes, each
      // added in order once its group has completed (wait 1: all but the newest).
      const uint32_t qlw = sQl + threadIdx.x / 128 * 64 * 128;  // this warpgroup's rows of Q lo
      float s[NB][4], st[2][NB][4], ot[2][8][4];
      uint32_t ph[NB][4], pl[NB][4];
      for (int j = 0; j < tiles; ++j) {
        const int sg = (it + j) & 1, par = ((it + j) >> 1) & 1;
        const uint32_t kh = ring.sK + sg * KB, vh = ring.sV + sg * KB;
        // S = Q K_j^T: chain 0 into s, chain c > 0 into st[c % 2], added to s in order.
        const auto schain = [&](float (&d)[NB][4], int c) {
          fg_wgmma_tf32_x<BN, 2, true, false, BM, BN>(d, qh + 2 * c, nullptr, qlw, kh, kh + HALF, 2 * c);
          fg_wgmma_commit();
        };
        fg_mbar_wait(ring.fullK(sg), par);
        fg_wgmma_fence();
        schain(s, 0);
        schain(st[1], 1);
#pragma unroll
        for (int c = 2; c < SC; ++c) {
          fg_wgmma_wait<1>();
          if (c == 2) fg_reg_fence(s);  // chain 0 has completed
          if (c > 2) fg_add(s, st[c % 2]);  // chain c - 2
          fg_wgmma_fence();
          schain(st[c % 2], c);
        }
        fg_wgmma_wait<1>();
        fg_reg_fence(s);
        if (SC > 2) fg_add(s, st[SC % 2]);  // chain SC - 2
        fg_wgmma_wait<0>();
        fg_add(s, st[(SC - 1) % 2]);
        fg_mbar_arrive(ring.emptyK(sg));

        float alpha[2];
        rows.template probs<false, false>(s, j * BN, sl2, alpha);
        rows.rescale(alpha);
        // P's A fragments: keys 8 kk + 2 t, + 1 as k t, t + 4 (V^T's order).
#pragma unroll
        for (int kk = 0; kk < NB; ++kk) {
          fg_split_tf32(s[kk][0], ph[kk][0], pl[kk][0]), fg_split_tf32(s[kk][2], ph[kk][1], pl[kk][1]);
          fg_split_tf32(s[kk][1], ph[kk][2], pl[kk][2]), fg_split_tf32(s[kk][3], ph[kk][3], pl[kk][3]);
        }

        // O += P V_j: chain i = 16 keys c = i / (D / 64) by 64 columns n = i % (D / 64) of O,
        // into ot[i % 2], added to those columns of o in order.
        const auto ochain = [&](int i) {
          const int c = i / (D / 64), n = i % (D / 64);
          fg_wgmma_tf32_x<64, 2, true, true, 64, D>(ot[i % 2], ph + 2 * c, pl + 2 * c, 0, vh + n * 64 * 128,
                                                    vh + HALF + n * 64 * 128, 2 * c);
          fg_wgmma_commit();
        };
        const auto oadd = [&](int i) { fg_add(rows.o, ot[i % 2], 8 * (i % (D / 64))); };
        fg_mbar_wait(ring.fullV(sg), par);
        fg_wgmma_fence();
        ochain(0);
        ochain(1);
#pragma unroll
        for (int i = 2; i < OC; ++i) {
          fg_wgmma_wait<1>();
          oadd(i - 2);
          fg_wgmma_fence();
          ochain(i);
        }
        fg_wgmma_wait<1>();
        oadd(OC - 2);
        fg_wgmma_wait<0>();
        oadd(OC - 1);
        fg_mbar_arrive(ring.emptyV(sg));
      }
    }
  }
};

// fg_attn_fwd_wgmma_exact (variant 24): grid (ceil(Nq/BM), H, B), 384 threads (two consumer
// warpgroups, a producer warpgroup whose registers go to the consumers by setmaxnreg: 24 and
// 240); k and v the planes of fg_attn_hopper_prep_exact.
template <int D, int BN, bool SPLIT> __device__ void fg_attn_fwd_wgmma_exact(const fg_attn_params& p) {
  using X = FgExact<D, BN, SPLIT>;
  if (fg_dynamic_smem() < X::SMEM) __trap();
  const uint32_t sQl = ((uint32_t)__cvta_generic_to_shared(fg_smem) + 1023) & ~1023u;
  const FgRing ring = FgRing::at(sQl + X::QLB, X::KB);
  const FgItem blk = FgItem::block(p, X::BM, BN);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) ring.init(X::CONSUMERS);
  __syncthreads();

  if (warp >= 4 * X::NWG) {  // the producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (warp == 4 * X::NWG && lane == 0)
      ring.load_head(p.k, p.v, (int64_t)blk.b * p.hkv + blk.hk, (p.nk + BN - 1) / BN, blk.tiles);
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  const int m0 = blk.m0, h = blk.h, b = blk.b, tiles = blk.tiles;
  FgRows<X::OB> rows(p, b, m0 + 16 * warp + lane / 4, lane % 4);
  if (tiles == 0) {
    rows.store(p, b, h);
    return;
  }
  uint32_t qh[X::KS][4];
  X::load_q(qh, sQl, p, (const float*)p.q + b * p.q_batch + h * p.q_head, m0);
  X::run_tiles(rows, qh, sQl, ring, 0, tiles, sl2);
  rows.store(p, b, h);
}

// fg_attn_fwd_wgmma_exact_persist (variants 25 and 26): variant 24 in a persistent grid (the
// schedule of wgmma.cuh's FgItem, as variants 19 to 22): grid (G), 384 threads; pp.src the
// problem, pp.dst the planes of fg_attn_hopper_prep_exact's layout (variant 25: written by it
// before the launch; CONV, variant 26: by this kernel), then CONV's flags ([B Hkv NT] uint32,
// zeroed by the launcher). The producer copies item after item's tiles into the ring, the
// tile it of the block's sequence in stage it % 2, and prefetches the next item's Q rows into
// L2; each consumer warpgroup loads its rows of an item's Q once its products of the item
// before have completed (load_q's barrier is the warpgroup's own).
//
// CONV: the pre-pass under the products, as variant 20 does it for bfloat16
// (attention_hopper_persist.cu): the producer warpgroup's warps 1 to 3 convert the tiles
// u = c, c + G, ... (u = (b Hkv + hk) NT + j, the order the items need them) with
// FgExactTile's load and put, U chunks of 16 bytes per thread in flight (all loads of a round
// before its stores), and set tile u's flag when its K and V^T are written (fg_tile_ready);
// the producer's copying lane waits for a tile's flag before its copy (fg_tile_wait). The
// converters wait for nothing and every block is resident (G <= multiprocessors, one block
// each), so every flag is set in finite time. PREG and CREG are setmaxnreg's registers for
// the producer warpgroup and the consumers: 24 and 240 without converters; their sum over
// the block must not pass the launch's 168 x 384 (else setmaxnreg.inc waits forever).
template <int D, int BN, bool SPLIT, bool CONV, int PREG, int CREG, int U>
__device__ void fg_attn_fwd_wgmma_exact_persist(const fg_mma_prep_params& pp) {
  using X = FgExact<D, BN, SPLIT>;
  using C = FgExactTile<D, BN, SPLIT>;
  static_assert(128 * PREG + 2 * 128 * CREG <= 168 * 384 && PREG % 8 == 0 && CREG % 8 == 0, "setmaxnreg");
  const fg_attn_params& p = pp.src;
  if (fg_dynamic_smem() < X::SMEM) __trap();
  const uint32_t sQl = ((uint32_t)__cvta_generic_to_shared(fg_smem) + 1023) & ~1023u;
  const FgRing ring = FgRing::at(sQl + X::QLB, X::KB);
  const int T = (p.nq + X::BM - 1) / X::BM, NT = (p.nk + BN - 1) / BN, G = gridDim.x, c = blockIdx.x;
  const int64_t items = (int64_t)T * p.h * p.b, planeTiles = (int64_t)p.b * p.hkv * NT;
  const uint64_t kplane = pp.dst, vplane = pp.dst + planeTiles * X::KB;
  uint32_t* const flags = CONV ? (uint32_t*)(vplane + planeTiles * X::KB) : nullptr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) ring.init(X::CONSUMERS);
  __syncthreads();

  if (warp >= 4 * X::NWG) {  // the producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PREG) : "memory");
    if (warp == 4 * X::NWG) {
      if (lane != 0) return;
      int it = 0;
      for (int k = 0;; ++k) {
        const int64_t w = fg_item(k, c, G);
        if (w >= items) break;
        const FgItem m(p, w, T, X::BM, BN);
        if (const int64_t wn = fg_item(k + 1, c, G); wn < items) fg_prefetch_q(p, FgItem(p, wn, T, X::BM, BN), D, X::BM);
        ring.load_head(kplane, vplane, (int64_t)m.b * p.hkv + m.hk, NT, m.tiles, it, flags);
        it += m.tiles;
      }
      return;
    }
    if constexpr (CONV) {  // the converters (warps 1 to 3)
      const int tid = threadIdx.x - X::CONSUMERS - 32;
      for (int64_t u = c; u < planeTiles; u += G) {
        const C tile(p, u, NT);
        char* const kt = (char*)kplane + u * X::KB;
        char* const vt = (char*)vplane + u * X::KB;
        for (int i0 = tid; i0 < 2 * C::CHUNKS; i0 += 96 * U) {
          float4 x[U];
#pragma unroll
          for (int e = 0; e < U; ++e)
            if (const int i = i0 + 96 * e; i < 2 * C::CHUNKS) x[e] = tile.load(i >= C::CHUNKS, i % C::CHUNKS);
#pragma unroll
          for (int e = 0; e < U; ++e)
            if (const int i = i0 + 96 * e; i < 2 * C::CHUNKS) C::put(kt, vt, i >= C::CHUNKS, i % C::CHUNKS, x[e]);
        }
        fg_tile_ready(flags + u, tid);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREG) : "memory");
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  FgRows<X::OB> rows;
  uint32_t qh[X::KS][4];
  int it = 0;
  for (int k = 0;; ++k) {
    const int64_t w = fg_item(k, c, G);
    if (w >= items) break;
    const FgItem m(p, w, T, X::BM, BN);
    rows.init(p, m.b, m.m0 + 16 * warp + lane / 4, lane % 4);
    if (m.tiles > 0) {
      X::load_q(qh, sQl, p, (const float*)p.q + m.b * p.q_batch + m.h * p.q_head, m.m0);
      X::run_tiles(rows, qh, sQl, ring, it, m.tiles, sl2);
      it += m.tiles;
    }
    rows.store(p, m.b, m.h);
  }
}

// ---- entry points (names built by cuda/attention_mma.go's mmaCfg.name and prep) ---------------

#define FG_FWD_WGMMA_EXACT(V, PN, SPLIT, D, BN)                                                 \
  extern "C" __global__ void __launch_bounds__(256) fg_attn_hopper_prep_##PN##_d##D##_n##BN(      \
      const fg_mma_prep_params pp) {                                                            \
    fg_attn_hopper_prep_exact<D, BN, SPLIT>(pp);                                                \
  }                                                                                             \
  extern "C" __global__ void __launch_bounds__(384, 1)                                          \
      fg_attn_fwd_wgmma_v##V##_##PN##_d##D##_m128_n##BN(const fg_attn_params p) {               \
    fg_attn_fwd_wgmma_exact<D, BN, SPLIT>(p);                                                   \
  }
// Variant 25 (persistent) reads the same pre-pass's planes; variant 26 (FUSED) writes them
// itself, its converters taking registers from the consumers: Exact setmaxnreg 40 and 232
// instead of 24 and 240, U = 4 chunks of 16 bytes in flight a converter thread (the Exact
// consumers are at the edge of 240 registers; an Exact item's products take about 3 times a
// TF32 item's, so its converters need a third of the bytes per second); TF32 56 and 224, U = 8
// (its consumers fit 168 registers: variant 24).
#define FG_FWD_WGMMA_EXACT_PERSIST_X(V, PN, SPLIT, D, BN, CONV, PREG, CREG, U)                 \
  extern "C" __global__ void __launch_bounds__(384, 1)                                          \
      fg_attn_fwd_wgmma_v##V##_##PN##_d##D##_m128_n##BN(const fg_mma_prep_params pp) {          \
    fg_attn_fwd_wgmma_exact_persist<D, BN, SPLIT, CONV, PREG, CREG, U>(pp);                     \
  }
#define FG_FWD_WGMMA_EXACT_PERSIST(V, PN, SPLIT, D, BN) FG_FWD_WGMMA_EXACT_PERSIST_X(V, PN, SPLIT, D, BN, false, 24, 240, 1)
#define FG_FWD_WGMMA_EXACT_FUSED(V, PN, SPLIT, D, BN, PREG, CREG, U) \
  FG_FWD_WGMMA_EXACT_PERSIST_X(V, PN, SPLIT, D, BN, true, PREG, CREG, U)
FG_FWD_WGMMA_EXACT(24, exact, true, 64, 64)
FG_FWD_WGMMA_EXACT(24, exact, true, 128, 32)
FG_FWD_WGMMA_EXACT(24, tf32, false, 64, 128)
FG_FWD_WGMMA_EXACT(24, tf32, false, 128, 64)
FG_FWD_WGMMA_EXACT_PERSIST(25, exact, true, 64, 64)
FG_FWD_WGMMA_EXACT_PERSIST(25, exact, true, 128, 32)
FG_FWD_WGMMA_EXACT_PERSIST(25, tf32, false, 64, 128)
FG_FWD_WGMMA_EXACT_PERSIST(25, tf32, false, 128, 64)
FG_FWD_WGMMA_EXACT_FUSED(26, exact, true, 64, 64, 40, 232, 4)
FG_FWD_WGMMA_EXACT_FUSED(26, exact, true, 128, 32, 40, 232, 4)
FG_FWD_WGMMA_EXACT_FUSED(26, tf32, false, 64, 128, 56, 224, 8)
FG_FWD_WGMMA_EXACT_FUSED(26, tf32, false, 128, 64, 56, 224, 8)
