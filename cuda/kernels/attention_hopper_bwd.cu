// attention_hopper_bwd.cu: the BF16 attention backward on Hopper's warpgroup tensor-core
// instructions (wgmma, sm_90a only; built as attention_hopper.cu describes): the same problem,
// masks, roundings and outputs as attention_mma_bwd.cu's kernels on the bfloat16 planes of the
// pre-pass fg_attn_bwd_bf16_prep (Q, dO, K, V rounded to bfloat16 and, per query row, the
// workspace entry (L2, delta) with L2 = (L + lres) log2 e), which they replace on compute
// capability 9.0 (cuda/attention_mma_bwd.go, pickMMABwd). With P_ij = exp2(s_ij scale log2 e -
// L2_i), s_ij = q_i . k_j, 0 where key j is not visible from row i (fg_key_limit):
//   dV_j = sum_i P_ij dO_i,  dS_ij = scale P_ij (dO_i . V_j - delta_i),
//   dK_j = sum_i dS_ij Q_i,  dQ_i = sum_j dS_ij K_j,
// dK and dV summed over the query heads of the key/value head's group (GQA). Two kernels, as
// there: dK/dV per key tile, dQ per query tile; no atomics, so the bits are the same on every
// run. Every product has the operand forms of the forward's (wgmma.cuh):
//
//   fg_attn_bwd_wgmma_dkdv: a block of NWG warpgroups owns BN = 64 NWG keys of one (b, key/value
//   head), warpgroup w the keys 64 w .. 64 w + 63 (its warp i the 16 keys 64 w + 16 i + [0, 16),
//   so a lane's accumulator rows are the mma.sync kernels' and mma_bwd.cuh's pieces serve
//   unchanged). It walks every query tile of BM rows of every query head of the group that
//   sees any of its keys (causal: from the tile of row n0 - causal_offset on) and per tile:
//     S^T  = K Q^T     wgmma SS, A = the warpgroup's 64 K rows, B = the Q tile (both K-major,
//     dP^T = V dO^T    the forward's S = Q K^T), [64 x BM] float32 each
//     P^T = exp2(S^T sl2 - L2), dS^T = scale P^T (dP^T - delta) in registers (fg_bwd_pds_t:
//                      a column per query, (L2, delta) of the tile's rows from shared memory)
//     dV += P^T dO     wgmma RS, A = P^T rounded to bfloat16 from the accumulators (the
//     dK += dS^T Q     forward's P in O += P V), B = the dO and Q tiles read down their
//                      columns (N-major, as the forward's V), dK and dV [64 x D] in registers.
//   The query tiles (Q, dO and their (L2, delta)) are double-buffered: the copy of the next
//   (cp.async by every thread) overlaps the products of this one; one block sync per tile.
//   dK and dV of keys at or past the key length are written as exactly 0.
//
//   fg_attn_bwd_wgmma_dq: a block of NWG warpgroups owns BM = 64 NWG query rows of one (b, h)
//   (Q and dO copied once) and walks the key tiles of BN keys they see, double-buffered:
//     S = Q K^T, dP = dO V^T     wgmma SS (the forward's S = Q K^T, twice)
//     dS = scale P (dP - delta)  in registers (fg_bwd_ds, P = exp2(S sl2 - L2))
//     dQ += dS K                 wgmma RS, B = the K tile read down its columns.
//
// Shared memory: bfloat16 tiles in wgmma's 128-byte swizzle (fg_sw128, 1024-byte aligned),
// filled by cp.async from the planes (fg_load_sw128: rows past Nq or past the visible keys
// zero-filled without a global read, so padded keys are never read); P and dS are selected to
// 0 outside the visible region, never computed as 0 x something. With kv_tiles set, Q, K and V
// come from the planes the persistent forward kept (cuda: AttentionBuffers.Planes; K and V as
// its swizzled tiles, fg_load_kv_sw128) and the pre-pass converts dO only
// (fg_attn_bwd_bf16_prep4_do).
#include "mma_bwd.cuh"
#include "wgmma.cuh"

// fg_dkdv_step begins step it of a dK/dV kernel's walk (both kernels below): it waits for the
// step's tile, syncs the block (every warpgroup is then done with the other stage), starts the
// next tile's copy unless LATE (load_stage(it + 1)), and returns the tile's first query row;
// LATE reads it from cur and steps cur on to step it + 1's tile, whose copy the caller starts
// once it has issued the step's first products.
template <bool LATE, int BM, class Load>
__device__ __forceinline__ int fg_dkdv_step(int it, int total, const FgKvWalk<BM>& walk, FgKvCursor& cur, int nq,
                                            const Load& load_stage) {
  fg_cp_async_wait<0>();
  fg_fence_async();
  __syncthreads();  // this tile landed for every thread; every warpgroup is done with the other stage
  if constexpr (!LATE) {
    fg_copy_if(it + 1 < total, [&] { load_stage(it + 1); });
    return walk.m0(it);
  }
  const int m0 = cur.m0;
  cur.step(walk, nq);
  return m0;
}

// fg_attn_bwd_wgmma_dkdv: grid (ceil(Nk/BN), Hkv, B), 2 BN threads (BN / 64 warpgroups); D = 64
// or 128 (d == D), BM = 64 or 128 (the N of S^T's product). Shared memory: K, V [BN][D], two
// stages of Q, dO [BM][D] bfloat16, then two stages of (L2, delta) [BM] (PIPE: three of each).
// PIPE (BM = 64): S^T and dP^T of query tile it + 1 are issued before the elementwise step of
// tile it, so the tensor cores compute them while the warpgroup computes P^T and dS^T (two
// sets of those accumulators, the loop unrolled by two to name them); dV, dK += of tile it
// are waited for in step it + 1, with S^T of tile it + 1. The copy of tile it + 2 then goes to
// the stage of tile it - 1, after a second block sync (every warpgroup past that wait). On the
// H100 ptxas serializes its wgmmas (C7511: two sets of S^T and dP^T, dK, dV and the in-flight
// fragments take 250 registers) and it is slower than the plain loop (cuda/attention_mma_bwd.go).
template <int D, int BN, int BM, bool OVL, bool FX, bool PIPE = false, bool LATE = false>
__device__ void fg_attn_bwd_wgmma_dkdv(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BN, CH = D / 8, OB = D / 8, NB = BM / 8, KS = D / 16, STAGES = PIPE ? 3 : 2;
  constexpr uint32_t KB = BN * D * 2, QB = BM * D * 2;  // bytes of a K or V tile, of a Q or dO tile
  static_assert(D % 64 == 0 && BN % 64 == 0 && (BM == 64 || BM == 128), "tile sizes");
  static_assert(!PIPE || (BM == 64 && !OVL), "PIPE: 64-row query tiles, two sets of S^T and dP^T");
  static_assert(!LATE || !(OVL || PIPE), "LATE: the plain loop");
  constexpr unsigned SMEM = 2 * KB + 2 * STAGES * QB + STAGES * BM * 8 + 1024;  // + the alignment to 1024 bytes
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sK = (sbase + 1023) & ~1023u, sV = sK + KB, sQ = sV + KB;  // stage s: Q at sQ + 2 QB s, dO after it
  float2* sLD = (float2*)(fg_smem + (sQ + 2 * STAGES * QB - sbase));           // stage s: sLD + BM s
  const auto stage = [](int it) { return STAGES == 2 ? (it & 1) : it % STAGES; };

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.h / p.hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const FgKvWalk<BM> walk(p, b, hk, n0, group);
  const int klen = walk.klen, total = walk.total;

  // load_stage_at starts the copy of step it's tile, tile m0 of query head hq (walk.hq(it),
  // walk.m0(it)).
  const auto load_stage_at = [&](int it, int hq, int m0) {
    const uint32_t st = sQ + stage(it) * 2 * QB;
    fg_load_sw128<BM, CH, THREADS>(
        st, (const uint4*)((const uint16_t*)p.q + b * p.q_batch + hq * p.q_head + (int64_t)m0 * p.q_row), p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(
        st + QB, (const uint4*)((const uint16_t*)p.do_ + b * p.o_batch + hq * p.o_head + (int64_t)m0 * p.o_row), p.nq - m0);
    fg_bwd_copy_ld<BM, THREADS>((float*)(sLD + stage(it) * BM), (const float*)p.delta + 2 * (((int64_t)b * p.h + hq) * p.nq + m0),
                                p.nq - m0);
  };
  const auto load_stage = [&](int it) { load_stage_at(it, walk.hq(it), walk.m0(it)); };
  if (total > 0) {
    fg_load_kv_sw128<BN, CH, THREADS>(sK, fg_kv_head(p, p.k, p.k_batch, p.k_head, b, hk), n0, p.k_row, klen - n0,
                                      p.kv_tiles);
    fg_load_kv_sw128<BN, CH, THREADS>(sV, fg_kv_head(p, p.v, p.v_batch, p.v_head, b, hk), n0, p.v_row, klen - n0,
                                      p.kv_tiles);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  // This warpgroup's 64 keys: rows 64 wg .. of each 64-column block of K and V.
  const uint32_t kw = sK + wg * 64 * 128, vw = sV + wg * 64 * 128;
  const int kr = 16 * warp + g;
  FgKvCursor cur(walk, hk);  // LATE: the tile of step it, stepped on to step it + 1's once it has begun
  if constexpr (PIPE) {
    float sa[NB][4], pa_[NB][4], sb[NB][4], pb[NB][4];  // S^T, dP^T of the even and the odd tiles
    const auto issue = [&](float (&st)[NB][4], float (&dpt)[NB][4], int it) {
      const uint32_t sq = sQ + stage(it) * 2 * QB;
      fg_wgmma_fence();
      fg_wgmma_abt<BM, KS, BN>(st, kw, sq);
      fg_wgmma_abt<BM, KS, BN>(dpt, vw, sq + QB);
      fg_wgmma_commit();
    };
    // step: tile it (S^T and dP^T issued in st, dpt), issuing tile it + 1's into st2, dpt2.
    const auto step = [&](float (&st)[NB][4], float (&dpt)[NB][4], float (&st2)[NB][4], float (&dpt2)[NB][4], int it) {
      if (it + 1 < total) {
        fg_cp_async_wait<0>();
        fg_fence_async();
        __syncthreads();  // tile it + 1 landed for every thread
        issue(st2, dpt2, it + 1);
        fg_wgmma_wait<1>();  // S^T, dP^T of tile it and dV, dK += of tile it - 1 done
      } else {
        fg_wgmma_wait<0>();
      }
      __syncthreads();  // every warpgroup is done with tile it - 1, whose stage takes tile it + 2
      if (it + 2 < total) {
        load_stage(it + 2);
        fg_cp_async_commit();
      }
      fg_reg_fence(st);
      fg_reg_fence(dpt);
      fg_reg_fence(dv);
      fg_reg_fence(dk);
      const int m0 = walk.m0(it);
      const uint32_t sq = sQ + stage(it) * 2 * QB;
      const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
      fg_bwd_pds_t<FX>(st, dpt, sLD + stage(it) * BM, 0, m0, n0, kr, t, klen, mask, sl2, scale, p);
      uint32_t pa[BM / 16][4], da[BM / 16][4];
      fg_wgmma_pack<BM>(pa, st);
      fg_wgmma_pack<BM>(da, dpt);
      fg_wgmma_fence();
      fg_wgmma_ab<D, BM>(dv, pa, sq + QB);
      fg_wgmma_ab<D, BM>(dk, da, sq);
      fg_wgmma_commit();
    };
    if (total > 0) {
      fg_cp_async_wait<0>();
      fg_fence_async();
      __syncthreads();  // K, V and tile 0 landed for every thread
      if (total > 1) {
        load_stage(1);
        fg_cp_async_commit();
      }
      issue(sa, pa_, 0);
    }
    for (int it = 0; it < total; it += 2) {
      step(sa, pa_, sb, pb, it);
      if (it + 1 < total) step(sb, pb, sa, pa_, it + 1);
    }
    fg_wgmma_wait<0>();
    fg_reg_fence(dv);
    fg_reg_fence(dk);
  } else for (int it = 0; it < total; ++it) {
    const int m0 = fg_dkdv_step<LATE>(it, total, walk, cur, p.nq, load_stage);
    const uint32_t sq = sQ + stage(it) * 2 * QB, sdo = sq + QB;
    const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
    const float2* ld = sLD + stage(it) * BM;
    float st[NB][4], dpt[NB][4];
    uint32_t pa[BM / 16][4], da[BM / 16][4];
    fg_wgmma_fence();
    fg_wgmma_abt<BM, KS, BN>(st, kw, sq);
    if constexpr (OVL) {  // P^T while dP^T's product runs, dS^T while dV's runs
      fg_wgmma_commit();
      fg_wgmma_abt<BM, KS, BN>(dpt, vw, sdo);
      fg_wgmma_commit();
      fg_wgmma_wait<1>();
      fg_reg_fence(st);
      fg_bwd_p_t<FX>(st, ld, 0, m0, n0, kr, t, klen, mask, sl2, p);
      fg_wgmma_pack<BM>(pa, st);
      fg_wgmma_fence();
      fg_wgmma_ab<D, BM>(dv, pa, sdo);
      fg_wgmma_commit();
      fg_wgmma_wait<1>();
      fg_reg_fence(dpt);
      fg_bwd_ds_t<FX>(st, dpt, ld, 0, m0, n0, kr, t, klen, mask, scale, p);
      fg_wgmma_pack<BM>(da, dpt);
      fg_wgmma_fence();
      fg_wgmma_ab<D, BM>(dk, da, sq);
    } else {
      fg_wgmma_abt<BM, KS, BN>(dpt, vw, sdo);
      fg_wgmma_commit();
      if constexpr (LATE)  // while the tensor cores run S^T and dP^T
        fg_copy_if(it + 1 < total, [&] { load_stage_at(it + 1, cur.hq, cur.m0); });
      fg_wgmma_wait<0>();
      fg_reg_fence(st);
      fg_reg_fence(dpt);
      if (LATE && !mask)  // one branch per tile, not a test per element
        fg_bwd_pds_t<FX>(st, dpt, ld, 0, m0, n0, kr, t, klen, false, sl2, scale, p);
      else
        fg_bwd_pds_t<FX>(st, dpt, ld, 0, m0, n0, kr, t, klen, mask, sl2, scale, p);
      fg_wgmma_pack<BM>(pa, st);
      fg_wgmma_pack<BM>(da, dpt);
      fg_wgmma_fence();
      fg_wgmma_ab<D, BM>(dv, pa, sdo);
      fg_wgmma_ab<D, BM>(dk, da, sq);
    }
    fg_wgmma_commit();
    fg_wgmma_wait<0>();
    fg_reg_fence(dv);
    fg_reg_fence(dk);
  }

  if constexpr (FX) fg_bwd_mul(dk, scale);  // dS^T came without the factor scale
  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_wgmma_dq: grid (ceil(Nq/BM), H, B), 2 BM threads (BM / 64 warpgroups); D = 64 or
// 128, BN = 64 or 128 (the N of S's product). Shared memory: Q, dO [BM][D] and two stages of
// K, V [BN][D] bfloat16 (PIPE: three). PIPE: dQ += dS K of key tile j is not waited for in
// its step: it runs on the tensor cores while the warpgroup syncs, starts the copy of tile
// j + 1 and issues S and dP of that tile, and step j + 1's first wait (for S) covers it; so
// the copy of tile j + 1 goes to a third stage (the one of tile j - 2, whose products are all
// done), and the dS fragments of step j stay live until then (ptxas keeps a register an
// in-flight wgmma reads until its wait).
template <int D, int BM, int BN, bool OVL, bool REG, bool FX, bool PIPE = false, bool LATE = false>
__device__ void fg_attn_bwd_wgmma_dq(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BM, CH = D / 8, OB = D / 8, NB = BN / 8, KS = D / 16, STAGES = PIPE ? 3 : 2;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;
  static_assert(D % 64 == 0 && BM % 64 == 0 && (BN == 64 || BN == 128), "tile sizes");
  static_assert(!PIPE || (OVL && !REG), "PIPE is a form of the OVL kernel");
  constexpr unsigned SMEM = 2 * QB + 2 * STAGES * KB + 1024;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sQ = (sbase + 1023) & ~1023u, sdO = sQ + QB, sK = sdO + QB;  // stage s: K at sK + 2 KB s, V after it
  const auto stage = [](int j) { return (uint32_t)(STAGES == 2 ? (j & 1) : j % STAGES); };

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  const float sl2 = (float)(p.scale * 1.4426950408889634), scale = (float)p.scale;
  const uint16_t* k = fg_kv_head(p, p.k, p.k_batch, p.k_head, b, hk);
  const uint16_t* v = fg_kv_head(p, p.v, p.v_batch, p.v_head, b, hk);
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  const FgDqRows rows(p, b, h, m0 + 16 * warp + g, t);

  const auto load_stage = [&](int j) {
    const uint32_t st = sK + stage(j) * 2 * KB;
    const int n0 = j * BN;
    fg_load_kv_sw128<BN, CH, THREADS>(st, k, n0, p.k_row, kv_end - n0, p.kv_tiles);
    fg_load_kv_sw128<BN, CH, THREADS>(st + KB, v, n0, p.v_row, kv_end - n0, p.kv_tiles);
  };
  if (kv_end > 0) {
    fg_load_sw128<BM, CH, THREADS>(
        sQ, (const uint4*)((const uint16_t*)p.q + b * p.q_batch + h * p.q_head + (int64_t)m0 * p.q_row), p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(
        sdO, (const uint4*)((const uint16_t*)p.do_ + b * p.o_batch + h * p.o_head + (int64_t)m0 * p.o_row), p.nq - m0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dq[OB][4];
  fg_bwd_zero(dq);
  // This warpgroup's 64 rows of Q and dO.
  const uint32_t qw = sQ + wg * 64 * 128, dow = sdO + wg * 64 * 128;
  const int tiles = (kv_end + BN - 1) / BN;
  // REG: the warp's 16 rows of Q and dO as A fragments in registers.
  uint32_t qa[REG ? KS : 1][4], doa[REG ? KS : 1][4];
  const auto qk = [&](float (&d)[NB][4], uint32_t (&a)[REG ? KS : 1][4], uint32_t aw, uint32_t b) {
    if constexpr (REG)
      fg_wgmma_abt_r<BN, KS>(d, a, b);
    else
      fg_wgmma_abt<BN, KS, BM>(d, aw, b);
  };
  for (int j = 0; j < tiles; ++j) {
    fg_cp_async_wait<0>();
    fg_fence_async();
    __syncthreads();  // this tile landed for every thread; every warpgroup is done with the other stage
    if constexpr (REG) {
      if (j == 0) fg_wgmma_load_a<BM, KS>(qa, sQ, 16 * warp, lane), fg_wgmma_load_a<BM, KS>(doa, sdO, 16 * warp, lane);
    }
    const auto load_next = [&] { fg_copy_if(j + 1 < tiles, [&] { load_stage(j + 1); }); };
    if constexpr (!LATE) load_next();
    const uint32_t kt = sK + stage(j) * 2 * KB, vt = kt + KB;
    float s[NB][4], dp[NB][4];
    fg_wgmma_fence();
    qk(s, qa, qw, kt);
    if constexpr (OVL) {  // P while dP's product runs
      fg_wgmma_commit();
      qk(dp, doa, dow, vt);
      fg_wgmma_commit();
      if constexpr (LATE) load_next();  // the next tile's copy while the tensor cores run S and dP
      fg_wgmma_wait<1>();  // PIPE: and dQ += dS K of the step before, committed before S
      if constexpr (PIPE) fg_reg_fence(dq);
      fg_reg_fence(s);
      fg_bwd_p<FX>(s, rows.l2, sl2);
      fg_wgmma_wait<0>();
      fg_reg_fence(dp);
      // The keys past a row's limit: LATE tests the warp's rows once (one branch per tile where
      // the others test each element).
      const bool mask = j * BN + BN > rows.lim_min;
      if (LATE && !__any_sync(~0u, mask)) {
        fg_bwd_ds_p<FX>(s, dp, rows.dl, rows.lim, false, j * BN, t, scale);
      } else {
        fg_bwd_ds_p<FX>(s, dp, rows.dl, rows.lim, mask, j * BN, t, scale);
        if constexpr (LATE) asm volatile("");  // keeps the paths apart (else nvcc merges them into the tests per element)
      }
    } else {
      qk(dp, doa, dow, vt);
      fg_wgmma_commit();
      if constexpr (LATE) load_next();
      fg_wgmma_wait<0>();
      fg_reg_fence(s);
      fg_reg_fence(dp);
      rows.ds<FX>(s, dp, j * BN, sl2, scale);
    }
    uint32_t da[BN / 16][4];
    fg_wgmma_pack<BN>(da, dp);
    fg_wgmma_fence();
    fg_wgmma_ab<D, BN>(dq, da, kt);
    fg_wgmma_commit();
    if constexpr (!PIPE) {
      fg_wgmma_wait<0>();
      fg_reg_fence(dq);
    }
  }
  if constexpr (PIPE) {
    fg_wgmma_wait<0>();
    fg_reg_fence(dq);
  }

  if constexpr (FX) fg_bwd_mul(dq, scale);  // dS came without the factor scale
  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, 16 * warp + g, p.nq - m0, p.nq - m0, t);
}

// ---- Exact on half products (3xF16, mmaBwdCfg.X3) ------------------------------------------------
// The two kernels above with every product as three half products on the planes of
// fg_attn_bwd_x3_prep4 (hi and lo of Q, dO, K, V, each row scaled by its own power of two;
// mma_bwd.cuh has the split and its error): A B = A_lo B_hi + A_hi B_lo + A_hi B_hi, the
// small products first (fg_x3_abt, fg_x3_ab). S^T and dP^T (S and dP) sum over d in the
// accumulator; each score then loses its two rows' factors (exact: powers of two), so P and
// dS are the Exact kernels' (exp2f, scale applied at the end). Before P^T and dS^T (dS) go
// into a product over queries (keys), each column takes the inverse factor of the dO or Q (K)
// row it meets, and then each row is split with its own power of two (FgX3Operand: P is far
// below 1 at long rows, and one factor for a whole tensor left dS's lo parts below half's
// normal range: 3.4× EFFICIENT's gradient error at N = 16384, call x3a). The tensor cores'
// accumulator truncates, so the sums over queries (dV, dK) and keys (dQ) are not left in it:
// each tile's three products go into zeroed tile sums, unscaled by row and added to the
// running sums in float32 (one FFMA), as the 3xTF32 kernels add their chains of 16. (Adding
// the products in the running accumulators instead failed the tests at N = 1025: dK and dV
// 3.6e-6 against a naive float32 loop's 7.1e-7, call x3a.) Shared memory as the bfloat16
// kernels' with two planes per tile and the streamed rows' inverse factors beside (L2, delta).

// FgX3Operand is one tile sum's A operand: an accumulator s [64 x K] split into half hi and lo
// fragments with each row scaled by its own power of two (fg_x3_row_factors, from this lane's
// largest magnitudes m of its rows), and the inverses that unscale the tile sum's rows.
template <int K> struct FgX3Operand {
  uint32_t hi[K / 16][4], lo[K / 16][4];
  float inv[2];
  __device__ __forceinline__ FgX3Operand(const float (&s)[K / 8][4], float (&m)[2]) {
    float f[2];
    fg_x3_row_factors(m, f, inv);
    fg_wgmma_pack_x3<K>(hi, lo, s, f);
  }
};

// fg_x3_tiles adds the three products of A B (fg_x3_ab) to acc for NT operand pairs at once
// (dK/dV: dV += P^T dO and dK += dS^T Q; dQ: dQ += dS K), B the tile at b[i] (lo at + blo):
// the products go into zeroed tile sums, which are unscaled by row and added; N = 128 in two
// rounds of 64 columns (tile sums of 32 registers, not 64).
template <int N, int K, int NT>
__device__ __forceinline__ void fg_x3_tiles(float (*const (&acc)[NT])[4], const FgX3Operand<K> (&a)[NT],
                                            const uint32_t (&b)[NT], uint32_t blo) {
#pragma unroll
  for (int c = 0; c < N / 64; ++c) {
    float t[NT][8][4];
    fg_wgmma_fence();
#pragma unroll
    for (int i = 0; i < NT; ++i) fg_x3_ab<64, K>(t[i], a[i].hi, a[i].lo, b[i] + c * K * 128, blo);  // columns 64 c ..
    fg_wgmma_commit();
    fg_wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < NT; ++i) {
      fg_reg_fence(t[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][8 * c + j][e] = fmaf(t[i][j][e], a[i].inv[e >> 1], acc[i][8 * c + j][e]);
    }
  }
}

// fg_attn_bwd_wgmma_dkdv_x3: fg_attn_bwd_wgmma_dkdv's grid, threads and walk (D = 64 or 128).
// Shared memory: K hi, K lo, V hi, V lo [BN][D], two stages of Q hi, Q lo, dO hi, dO lo
// [BM][D], of (L2, delta) [BM] and of the query rows' inverse factors (Q, dO) [BM].
template <int D, int BN, int BM, bool LATE = false>
__device__ void fg_attn_bwd_wgmma_dkdv_x3(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BN, CH = D / 8, OB = D / 8, NB = BM / 8, KS = D / 16;
  constexpr uint32_t KB = BN * D * 2, QB = BM * D * 2;  // bytes of a K or V plane tile, of a Q or dO one
  static_assert(D % 64 == 0 && BN % 64 == 0 && (BM == 32 || BM == 64), "tile sizes");
  constexpr unsigned SMEM = 4 * KB + 2 * 4 * QB + 2 * 2 * BM * 8 + 1024;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  // K hi at sK (lo + KB), V hi at sV (lo + KB); stage s: Q hi at sQ + 4 QB s (lo + QB), dO hi 2 QB after it.
  const uint32_t sK = (sbase + 1023) & ~1023u, sV = sK + 2 * KB, sQ = sV + 2 * KB;
  float2* sLD = (float2*)(fg_smem + (sQ + 2 * 4 * QB - sbase));  // stage s: (L2, delta) at sLD + BM s
  float2* sQF = sLD + 2 * BM;                                     // stage s: (Q, dO) inverse factors at sQF + BM s

  const int n0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.h / p.hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4, wg = warp / 4;
  const FgX3Planes pl(p);
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  const FgKvWalk<BM> walk(p, b, hk, n0, group);
  const int klen = walk.klen, total = walk.total;
  const int kr = 16 * warp + lane / 4;
  // This lane's two keys' inverse factors (K, V); 0 past the key length (their rows are 0 and never stored).
  float2 kf[2];
  float sl2k[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int j = n0 + kr + 8 * r;
    kf[r] = j < klen ? pl.kf(p)[((int64_t)b * p.hkv + hk) * p.nk + j] : make_float2(0.f, 0.f);
    sl2k[r] = sl2 * kf[r].x;
  }

  // load_stage_at: step it's tile, tile m0 of query head hq (walk.hq(it), walk.m0(it)).
  const auto load_stage_at = [&](int it, int hq, int m0) {
    const uint32_t st = sQ + (it & 1) * 4 * QB;
    const uint16_t* q = (const uint16_t*)p.q + b * p.q_batch + hq * p.q_head + (int64_t)m0 * p.q_row;
    const uint16_t* dO = (const uint16_t*)p.do_ + b * p.o_batch + hq * p.o_head + (int64_t)m0 * p.o_row;
    fg_load_sw128<BM, CH, THREADS>(st, (const uint4*)q, p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(st + QB, (const uint4*)(q + pl.qlo), p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(st + 2 * QB, (const uint4*)dO, p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(st + 3 * QB, (const uint4*)(dO + pl.qlo), p.nq - m0);
    const int64_t row = ((int64_t)b * p.h + hq) * p.nq + m0;
    fg_bwd_copy_ld<BM, THREADS>((float*)(sLD + (it & 1) * BM), (const float*)p.delta + 2 * row, p.nq - m0);
    fg_bwd_copy_ld<BM, THREADS>((float*)(sQF + (it & 1) * BM), (const float*)(pl.qf() + row), p.nq - m0);
  };
  const auto load_stage = [&](int it) { load_stage_at(it, walk.hq(it), walk.m0(it)); };
  if (total > 0) {
    const uint16_t* k = fg_kv_head(p, p.k, p.k_batch, p.k_head, b, hk);
    const uint16_t* v = fg_kv_head(p, p.v, p.v_batch, p.v_head, b, hk);
    fg_load_kv_sw128<BN, CH, THREADS>(sK, k, n0, p.k_row, klen - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(sK + KB, k + pl.klo, n0, p.k_row, klen - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(sV, v, n0, p.v_row, klen - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(sV + KB, v + pl.klo, n0, p.v_row, klen - n0, false);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dk[OB][4], dv[OB][4];
  fg_bwd_zero(dk);
  fg_bwd_zero(dv);
  const uint32_t kw = sK + wg * 64 * 128, vw = sV + wg * 64 * 128;  // this warpgroup's 64 keys
  FgKvCursor cur(walk, hk);  // LATE: the tile of step it, stepped on to step it + 1's once it has begun
  for (int it = 0; it < total; ++it) {
    const int m0 = fg_dkdv_step<LATE>(it, total, walk, cur, p.nq, load_stage);
    const uint32_t sq = sQ + (it & 1) * 4 * QB, sdo = sq + 2 * QB;
    const bool mask = fg_dkdv_masked<BM, BN>(p, m0, n0, klen);
    const float2 *ld = sLD + (it & 1) * BM, *qf = sQF + (it & 1) * BM;
    float st[NB][4], dpt[NB][4];
    fg_wgmma_fence();
    fg_x3_abt<BM, KS, BN>(st, kw, KB, sq, QB);
    fg_x3_abt<BM, KS, BN>(dpt, vw, KB, sdo, QB);
    fg_wgmma_commit();
    if constexpr (LATE)  // while the tensor cores run S^T and dP^T
      fg_copy_if(it + 1 < total, [&] { load_stage_at(it + 1, cur.hq, cur.m0); });
    fg_wgmma_wait<0>();
    fg_reg_fence(st);
    fg_reg_fence(dpt);
    float mp[2] = {0.f, 0.f}, md[2] = {0.f, 0.f};  // the largest |P^T'|, |dS^T'| of this lane's two keys
#pragma unroll
    for (int j = 0; j < NB; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // a column per query (fg_bwd_pds_t's layout), key row r
        const int qi = 8 * j + 2 * t + (e & 1), r = e >> 1;
        const float2 x = ld[qi], f = qf[qi];  // (L2, delta), the query row's (Q, dO) inverse factors
        const float pv = fg_bwd_p1<false>(st[j][e] * f.x, sl2k[r], x.x);  // S' f_q f_k sl2 = S sl2
        const float ds = pv * fmaf(dpt[j][e] * f.y, kf[r].y, -x.y);      // P (dP - delta), dP = dP' f_o f_v
        const bool seen = !mask || fg_bwd_seen(p, m0 + qi, n0 + kr + 8 * r, klen);
        st[j][e] = seen ? pv * f.y : 0.f;  // P^T's column i meets dO row i: times its inverse factor
        dpt[j][e] = seen ? ds * f.x : 0.f;  // dS^T's meets Q row i
        mp[r] = fmaxf(mp[r], st[j][e]);
        md[r] = fmaxf(md[r], fabsf(dpt[j][e]));
      }
    const FgX3Operand<BM> a[2] = {FgX3Operand<BM>(st, mp), FgX3Operand<BM>(dpt, md)};
    float (*const acc[2])[4] = {dv, dk};
    fg_x3_tiles<D, BM, 2>(acc, a, {sdo, sq}, QB);  // dV += P^T dO, dK += dS^T Q
  }

  fg_bwd_mul(dk, (float)p.scale);
  float* dK = (float*)p.dk + b * p.k_batch + hk * p.k_head;
  float* dV = (float*)p.dv + b * p.v_batch + hk * p.v_head;
  fg_bwd_store<D>(dK + (int64_t)n0 * p.k_row, p.k_row, dk, kr, p.nk - n0, klen - n0, t);
  fg_bwd_store<D>(dV + (int64_t)n0 * p.v_row, p.v_row, dv, kr, p.nk - n0, klen - n0, t);
}

// fg_attn_bwd_wgmma_dq_x3: fg_attn_bwd_wgmma_dq's grid and threads (D = 64 or 128). Shared
// memory: Q hi, Q lo, dO hi, dO lo [BM][D], two stages of K hi, K lo, V hi, V lo [BN][D] and
// of the keys' inverse factors (K, V) [BN].
template <int D, int BM, int BN, bool LATE = false>
__device__ void fg_attn_bwd_wgmma_dq_x3(const fg_attn_params& p) {
  constexpr int THREADS = 2 * BM, CH = D / 8, OB = D / 8, NB = BN / 8, KS = D / 16;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;
  static_assert(D % 64 == 0 && BM % 64 == 0 && (BN == 32 || BN == 64), "tile sizes");
  constexpr unsigned SMEM = 4 * QB + 2 * 4 * KB + 2 * BN * 8 + 1024;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  // Q hi at sQ (lo + QB), dO hi at sdO (lo + QB); stage s: K hi at sK + 4 KB s (lo + KB), V hi 2 KB after it.
  const uint32_t sQ = (sbase + 1023) & ~1023u, sdO = sQ + 2 * QB, sK = sdO + 2 * QB;
  float2* sKF = (float2*)(fg_smem + (sK + 2 * 4 * KB - sbase));  // stage s: (K, V) inverse factors at sKF + BN s

  const int m0 = (gridDim.x - 1 - blockIdx.x) * BM, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.h / p.hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4, wg = warp / 4;
  const FgX3Planes pl(p);
  const float sl2 = (float)(p.scale * 1.4426950408889634);
  const uint16_t* k = fg_kv_head(p, p.k, p.k_batch, p.k_head, b, hk);
  const uint16_t* v = fg_kv_head(p, p.v, p.v_batch, p.v_head, b, hk);
  const float* kfh = (const float*)(pl.kf(p) + ((int64_t)b * p.hkv + hk) * p.nk);  // this head's (K, V) factors
  const int kv_end = fg_key_limit(p, b, min(m0 + BM, p.nq) - 1);
  const int r0 = m0 + 16 * warp + lane / 4;
  const FgDqRows rows(p, b, h, r0, t);
  float2 qf[2];  // this lane's two rows' (Q, dO) inverse factors (0 past Nq)
  float sl2q[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    qf[r] = r0 + 8 * r < p.nq ? pl.qf()[((int64_t)b * p.h + h) * p.nq + r0 + 8 * r] : make_float2(0.f, 0.f);
    sl2q[r] = sl2 * qf[r].x;
  }

  const auto load_stage = [&](int j) {
    const uint32_t st = sK + (j & 1) * 4 * KB;
    const int n0 = j * BN;
    fg_load_kv_sw128<BN, CH, THREADS>(st, k, n0, p.k_row, kv_end - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(st + KB, k + pl.klo, n0, p.k_row, kv_end - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(st + 2 * KB, v, n0, p.v_row, kv_end - n0, false);
    fg_load_kv_sw128<BN, CH, THREADS>(st + 3 * KB, v + pl.klo, n0, p.v_row, kv_end - n0, false);
    fg_bwd_copy_ld<BN, THREADS>((float*)(sKF + (j & 1) * BN), kfh + 2 * n0, kv_end - n0);
  };
  if (kv_end > 0) {
    const uint16_t* q = (const uint16_t*)p.q + b * p.q_batch + h * p.q_head + (int64_t)m0 * p.q_row;
    const uint16_t* dO = (const uint16_t*)p.do_ + b * p.o_batch + h * p.o_head + (int64_t)m0 * p.o_row;
    fg_load_sw128<BM, CH, THREADS>(sQ, (const uint4*)q, p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(sQ + QB, (const uint4*)(q + pl.qlo), p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(sdO, (const uint4*)dO, p.nq - m0);
    fg_load_sw128<BM, CH, THREADS>(sdO + QB, (const uint4*)(dO + pl.qlo), p.nq - m0);
    load_stage(0);
    fg_cp_async_commit();
  }

  float dq[OB][4];
  fg_bwd_zero(dq);
  const uint32_t qw = sQ + wg * 64 * 128, dow = sdO + wg * 64 * 128;  // this warpgroup's 64 rows
  const int tiles = (kv_end + BN - 1) / BN;
  for (int j = 0; j < tiles; ++j) {
    fg_cp_async_wait<0>();
    fg_fence_async();
    __syncthreads();  // this tile landed for every thread; every warpgroup is done with the other stage
    const auto load_next = [&] { fg_copy_if(j + 1 < tiles, [&] { load_stage(j + 1); }); };
    if constexpr (!LATE) load_next();
    const uint32_t kt = sK + (j & 1) * 4 * KB, vt = kt + 2 * KB;
    const float2* kf = sKF + (j & 1) * BN;
    float s[NB][4], dp[NB][4];
    fg_wgmma_fence();
    fg_x3_abt<BN, KS, BM>(s, qw, QB, kt, KB);
    fg_x3_abt<BN, KS, BM>(dp, dow, QB, vt, KB);
    fg_wgmma_commit();
    if constexpr (LATE) load_next();  // the next tile's copy while the tensor cores run S and dP
    fg_wgmma_wait<0>();
    fg_reg_fence(s);
    fg_reg_fence(dp);
    const bool mask = j * BN + BN > rows.lim_min;
    float md[2] = {0.f, 0.f};  // the largest |dS'| of this lane's two rows
#pragma unroll
    for (int jj = 0; jj < NB; ++jj)
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // rows r0 + 8 (e / 2), keys j BN + 8 jj + 2 t + e % 2
        const int r = e >> 1, kc = 8 * jj + 2 * t + (e & 1);
        const float2 f = kf[kc];  // the key's (K, V) inverse factors
        const float pv = fg_bwd_p1<false>(s[jj][e] * f.x, sl2q[r], rows.l2[r]);
        const float ds = pv * fmaf(dp[jj][e] * f.y, qf[r].y, -rows.dl[r]);
        dp[jj][e] = mask && j * BN + kc >= rows.lim[r] ? 0.f : ds * f.x;  // dS's column j meets K row j
        md[r] = fmaxf(md[r], fabsf(dp[jj][e]));
      }
    const FgX3Operand<BN> a[1] = {FgX3Operand<BN>(dp, md)};
    float (*const acc[1])[4] = {dq};
    fg_x3_tiles<D, BN, 1>(acc, a, {kt}, KB);  // dQ += dS K
  }

  fg_bwd_mul(dq, (float)p.scale);
  float* dQ = (float*)p.dq + b * p.q_batch + h * p.q_head;
  fg_bwd_store<D>(dQ + (int64_t)m0 * p.q_row, p.q_row, dq, 16 * warp + lane / 4, p.nq - m0, p.nq - m0, t);
}

// ---- entry points (names built by cuda/attention_mma_bwd.go's mmaBwdCfg.name) ----------------

#define FG_BWD_WGMMA_DKDV_L(D, BN, BM, OVL, FX, PIPE, LATE, MINB, SFX)                \
  extern "C" __global__ void __launch_bounds__(2 * BN, MINB)                           \
      fg_attn_bwd_wgmma_dkdv_bf16_d##D##_n##BN##_m##BM##SFX(const fg_attn_params p) {   \
    fg_attn_bwd_wgmma_dkdv<D, BN, BM, OVL, FX, PIPE, LATE>(p);                          \
  }
#define FG_BWD_WGMMA_DKDV_B(D, BN, BM, OVL, FX, PIPE, MINB, SFX) FG_BWD_WGMMA_DKDV_L(D, BN, BM, OVL, FX, PIPE, false, MINB, SFX)
#define FG_BWD_WGMMA_DKDV(D, BN, BM, OVL, FX, SFX) FG_BWD_WGMMA_DKDV_B(D, BN, BM, OVL, FX, false, 1, SFX)
#define FG_BWD_WGMMA_DQ_L(D, BM, BN, OVL, REG, FX, PIPE, LATE, MINB, SFX)             \
  extern "C" __global__ void __launch_bounds__(2 * BM, MINB)                           \
      fg_attn_bwd_wgmma_dq_bf16_d##D##_m##BM##_n##BN##SFX(const fg_attn_params p) {     \
    fg_attn_bwd_wgmma_dq<D, BM, BN, OVL, REG, FX, PIPE, LATE>(p);                       \
  }
#define FG_BWD_WGMMA_DQ_B(D, BM, BN, OVL, REG, FX, PIPE, MINB, SFX) FG_BWD_WGMMA_DQ_L(D, BM, BN, OVL, REG, FX, PIPE, false, MINB, SFX)
#define FG_BWD_WGMMA_DQ(D, BM, BN, OVL, REG, FX, SFX) FG_BWD_WGMMA_DQ_B(D, BM, BN, OVL, REG, FX, false, 1, SFX)
// The kernels of mmaBwdCfgs (Hopper): two warpgroups (128 keys or query rows) and one (64,
// two blocks per multiprocessor), query tiles of 64 or 128 rows, key tiles of 64 or 128;
// _reg: the block's own operand (dK/dV: K and V; dQ: Q and dO) as A fragments in registers;
// _ovl: P computed while dP's product runs (and dK/dV: dS while dV's); _fx: P = exp2 as one
// FFMA and one ex2.approx.ftz, scale applied to dK, dQ at the end instead of to every dS
// (fg_bwd_p1, fg_bwd_ds1); dq d64_m64_n64_ovl_fx and dkdv _b3: registers capped for three
// blocks per multiprocessor (__launch_bounds__ minimum 3: 168 each); _pipe: the PIPE forms.
FG_BWD_WGMMA_DKDV(64, 64, 128, false, false, )
FG_BWD_WGMMA_DKDV(64, 128, 64, false, false, )
FG_BWD_WGMMA_DKDV(64, 64, 64, false, false, )
FG_BWD_WGMMA_DKDV(128, 128, 64, false, false, )
FG_BWD_WGMMA_DKDV(128, 64, 64, false, false, )
FG_BWD_WGMMA_DKDV(64, 128, 64, true, false, _ovl)
FG_BWD_WGMMA_DKDV(128, 128, 64, true, false, _ovl)
FG_BWD_WGMMA_DKDV(64, 64, 128, false, true, _fx)
FG_BWD_WGMMA_DKDV(64, 128, 128, false, true, _fx)
FG_BWD_WGMMA_DKDV(128, 128, 64, false, true, _fx)
FG_BWD_WGMMA_DKDV_B(64, 64, 64, false, true, false, 3, _fx_b3)
FG_BWD_WGMMA_DKDV_B(64, 64, 64, false, true, true, 1, _fx_pipe)
FG_BWD_WGMMA_DKDV_B(64, 128, 64, false, true, true, 1, _fx_pipe)
FG_BWD_WGMMA_DQ(64, 128, 128, true, false, false, _ovl)
FG_BWD_WGMMA_DQ(64, 128, 128, false, false, false, )
FG_BWD_WGMMA_DQ(64, 128, 64, false, false, false, )
FG_BWD_WGMMA_DQ(64, 64, 128, false, false, false, )
FG_BWD_WGMMA_DQ(128, 128, 128, false, false, false, )
FG_BWD_WGMMA_DQ(128, 128, 64, false, false, false, )
FG_BWD_WGMMA_DQ(128, 64, 64, false, false, false, )
FG_BWD_WGMMA_DQ(128, 128, 64, true, false, false, _ovl)
FG_BWD_WGMMA_DQ(128, 128, 128, true, false, false, _ovl)
FG_BWD_WGMMA_DQ(64, 128, 128, true, true, false, _reg_ovl)
FG_BWD_WGMMA_DQ(64, 128, 128, false, true, false, _reg)
FG_BWD_WGMMA_DQ(128, 128, 64, false, true, false, _reg)
FG_BWD_WGMMA_DQ(128, 128, 64, true, true, false, _reg_ovl)
FG_BWD_WGMMA_DQ(64, 128, 128, true, false, true, _ovl_fx)
FG_BWD_WGMMA_DQ(64, 64, 128, true, false, true, _ovl_fx)
FG_BWD_WGMMA_DQ(128, 128, 128, false, false, true, _fx)
FG_BWD_WGMMA_DQ_B(64, 64, 64, true, false, true, false, 3, _ovl_fx)
FG_BWD_WGMMA_DQ_B(64, 128, 128, true, false, true, true, 1, _ovl_fx_pipe)
FG_BWD_WGMMA_DQ_B(128, 128, 64, true, false, true, true, 1, _ovl_fx_pipe)
// _late (eighteenth session): the next tile's copy issued once this tile's first products are
// (LATE: the copy no longer delays them), the masks tested once per tile.
FG_BWD_WGMMA_DKDV_L(64, 64, 64, false, true, false, true, 3, _fx_b3_late)
FG_BWD_WGMMA_DKDV_L(128, 128, 64, false, false, false, true, 1, _late)
FG_BWD_WGMMA_DQ_L(64, 128, 128, true, false, true, true, true, 1, _ovl_fx_pipe_late)
FG_BWD_WGMMA_DQ_L(128, 128, 128, false, false, true, false, true, 1, _fx_late)
FG_BWD_WGMMA_DQ_L(128, 128, 64, true, false, true, true, true, 1, _ovl_fx_pipe_late)

// 3xF16 (Exact): _x3.
#define FG_BWD_WGMMA_DKDV_X3(D, BN, BM, LATE, SFX)                                         \
  extern "C" __global__ void __launch_bounds__(2 * BN, 1)                                   \
      fg_attn_bwd_wgmma_dkdv_exact_d##D##_n##BN##_m##BM##_x3##SFX(const fg_attn_params p) {  \
    fg_attn_bwd_wgmma_dkdv_x3<D, BN, BM, LATE>(p);                                           \
  }
#define FG_BWD_WGMMA_DQ_X3(D, BM, BN, LATE, SFX)                                            \
  extern "C" __global__ void __launch_bounds__(2 * BM, 1)                                   \
      fg_attn_bwd_wgmma_dq_exact_d##D##_m##BM##_n##BN##_x3##SFX(const fg_attn_params p) {    \
    fg_attn_bwd_wgmma_dq_x3<D, BM, BN, LATE>(p);                                             \
  }
FG_BWD_WGMMA_DKDV_X3(64, 64, 64, false, )
FG_BWD_WGMMA_DKDV_X3(64, 128, 64, false, )
FG_BWD_WGMMA_DQ_X3(64, 128, 64, false, )
FG_BWD_WGMMA_DKDV_X3(128, 128, 32, false, )
FG_BWD_WGMMA_DQ_X3(128, 128, 32, false, )
// _late: the LATE forms (above): the next tile's copy issued once the tile's first products are.
FG_BWD_WGMMA_DKDV_X3(64, 128, 64, true, _late)
FG_BWD_WGMMA_DQ_X3(64, 128, 64, true, _late)
FG_BWD_WGMMA_DKDV_X3(128, 128, 32, true, _late)
FG_BWD_WGMMA_DQ_X3(128, 128, 32, true, _late)
