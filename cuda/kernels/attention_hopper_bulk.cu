// attention_hopper_bulk.cu: variants 14 and 15 of the Hopper forward (sm_90a, bfloat16): the
// kernels of attention_hopper.cu (layouts, products, softmax as described there) fed by bulk
// copies. A module of its own, so that its PTX (JIT-compiled separately) cannot stop the
// other Hopper kernels from loading.
#include "wgmma.cuh"

// ---- whole tiles by bulk copies, a producer warp, mbarriers ----------------------------------
//
// Variants 12 and 13 spend every thread on cp.async copies (16-byte pieces, swizzled addresses)
// and a block-wide sync per key tile, which keeps the two warpgroups in lockstep. Here the
// pre-pass (fg_attn_hopper_prep) writes K and V already in the shared-memory layout, tile by
// tile, so a tile is one contiguous run of bytes that one bulk copy (cp.async.bulk, the
// non-tensor form of TMA: no tensor map) moves into shared memory; one producer warp (warp
// 4 NWG, one lane) issues them, and mbarriers replace the syncs: full barriers count the
// bytes (expect_tx / complete_tx), empty barriers the consumer threads done with a buffer.
// The warpgroups never wait for each other. Variant 14 runs each tile as S, softmax, P V;
// variant 15 overlaps softmax_j with P_{j-1} V_{j-1} as variant 13 (first tile peeled, so the
// loop body is the same every time).

// fg_attn_hopper_prep: the pre-pass of variants 14 and 15 (Go: startMMA). dst holds two planes,
// K then V, each [B][Hkv][NT][BN x D] bfloat16 with NT = ceil(Nk / BN) and each tile in
// fg_sw128's layout; keys at or past Nk or the batch's key length are written as zeros
// (never read: a tile copy moves whole tiles, and zeros keep 0 x V finite).
extern "C" __global__ void __launch_bounds__(256) fg_attn_hopper_prep(const fg_mma_prep_params pp) {
  const fg_attn_params& p = pp.src;
  constexpr int BN = FG_HOPPER_BN;
  const int CH = p.d / 8, NT = (p.nk + BN - 1) / BN;
  const int64_t rows = (int64_t)p.b * p.hkv * NT * BN, groups = rows * CH;
  uint4* dk = (uint4*)pp.dst;
  uint4* dv = dk + groups;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < groups; i += (int64_t)gridDim.x * blockDim.x) {
    const int c = (int)(i % CH);
    const int64_t row = i / CH, bh = row / (NT * BN);
    const int j = (int)(row % (NT * BN)), hk = (int)(bh % p.hkv), b = (int)(bh / p.hkv);
    const int tile = j / BN, r = j % BN;
    uint4 kx = make_uint4(0, 0, 0, 0), vx = kx;
    if (j < p.nk && (!p.key_lengths || j < ((const int32_t*)p.key_lengths)[b])) {
      const float* kr = (const float*)p.k + b * p.k_batch + hk * p.k_head + j * p.k_row + 8 * c;
      const float* vr = (const float*)p.v + b * p.v_batch + hk * p.v_head + j * p.v_row + 8 * c;
      kx = fg_bf16x8(kr, 1.f), vx = fg_bf16x8(vr, 1.f);
    }
    const int64_t at = (bh * NT + tile) * (BN * CH) + fg_sw128<BN>(r, c) / 16;
    dk[at] = kx;
    dv[at] = vx;
  }
}


// fg_attn_fwd_wgmma_bulk (variants 14, 15, 17, 18): grid (ceil(Nq/BM), H, B), 128 NWG + 32
// threads (NWG consumer warpgroups, one producer warp), or 128 NWG + 128 with PWG (variants 17
// and 18: a producer warpgroup that gives its registers to the consumers with setmaxnreg, as
// FlashAttention-3: 24 each for the producer, 240 for the consumers, where ptxas budgets 168
// for 384 threads); k and v the planes of fg_attn_hopper_prep.
template <int D, int NWG, bool OVL, bool PWG = false> __device__ void fg_attn_fwd_wgmma_bulk(const fg_attn_params& p) {
  constexpr int BN = FG_HOPPER_BN, BM = 64 * NWG, CONSUMERS = 128 * NWG;
  constexpr int NB = BN / 8, OB = D / 8, KS = D / 16;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;
  constexpr unsigned SMEM = QB + 4 * KB + 64 + 1024;
  if (fg_dynamic_smem() < SMEM) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sQ = (sbase + 1023) & ~1023u;
  const FgRing ring = FgRing::at(sQ + QB, KB);

  const FgItem blk = FgItem::block(p, BM, BN);
  const int m0 = blk.m0, h = blk.h, b = blk.b, hk = blk.hk, tiles = blk.tiles;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  if (threadIdx.x == 0) ring.init(CONSUMERS);
  __syncthreads();

  if (warp >= 4 * NWG) {  // the producer
    if constexpr (PWG) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n" ::: "memory");
    if (warp == 4 * NWG && lane == 0) ring.load_head(p.k, p.v, (int64_t)b * p.hkv + hk, (p.nk + BN - 1) / BN, tiles);
    return;
  }

  if constexpr (PWG) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n" ::: "memory");
  const float sl2 = (float)(fabs(p.scale) * 1.4426950408889634), qs = p.scale < 0 ? -1.f : 1.f;
  FgRows<OB, float> rows(p, b, m0 + 16 * warp + g, t);
  if (tiles == 0) {
    rows.store(p, b, h);
    return;
  }
  const uint32_t qw = sQ + wg * 64 * 128;
  fg_wgmma_load_q<D, BM>(sQ, (const float*)p.q + b * p.q_batch + h * p.q_head, m0, p.nq, p.q_row, qs, wg);
  if constexpr (OVL) {
    fg_wgmma_tiles_ovl<D, BM>(rows, qw, ring, 0, tiles, sl2);
  } else {  // each tile as S, softmax, P V
    uint32_t pa[BN / 16][4];
    float s[NB][4];
    float alpha[2];
    for (int j = 0; j < tiles; ++j) {
      const int st = j & 1, par = (j >> 1) & 1;
      fg_mbar_wait(ring.fullK(st), par);
      fg_wgmma_fence();
      fg_wgmma_abt<BN, KS, BM>(s, qw, ring.sK + st * KB);
      fg_wgmma_commit();
      fg_wgmma_wait<0>();
      fg_reg_fence(s);
      fg_mbar_arrive(ring.emptyK(st));
      rows.template probs<true, true>(s, j * BN, sl2, alpha);
      rows.rescale(alpha);
      fg_wgmma_pack<BN>(pa, s);
      fg_mbar_wait(ring.fullV(st), par);
      fg_wgmma_fence();
      fg_wgmma_ab<D, BN>(rows.o, pa, ring.sV + st * KB);
      fg_wgmma_commit();
      fg_wgmma_wait<0>();
      fg_reg_fence(rows.o);
      fg_mbar_arrive(ring.emptyV(st));
    }
  }
  rows.store(p, b, h);
}

// ---- entry points (names built by cuda/attention_mma.go's mmaCfg.name) -----------------------

#define FG_FWD_WGMMA_BULK(V, OVL, PWG, D, BM)                                             \
  extern "C" __global__ void __launch_bounds__(2 * BM + (PWG ? 128 : 32), 1)              \
      fg_attn_fwd_wgmma_v##V##_bf16_d##D##_m##BM##_n128(const fg_attn_params p) {          \
    fg_attn_fwd_wgmma_bulk<D, BM / 64, OVL, PWG>(p);                                       \
  }
FG_FWD_WGMMA_BULK(14, false, false, 64, 128)
FG_FWD_WGMMA_BULK(14, false, false, 128, 128)
FG_FWD_WGMMA_BULK(15, true, false, 64, 128)
FG_FWD_WGMMA_BULK(15, true, false, 128, 128)
// Variants 17 (overlap) and 18 (none): 15 and 14 with a producer warpgroup and setmaxnreg.
FG_FWD_WGMMA_BULK(17, true, true, 64, 128)
FG_FWD_WGMMA_BULK(17, true, true, 128, 128)
FG_FWD_WGMMA_BULK(18, false, true, 64, 128)
FG_FWD_WGMMA_BULK(18, false, true, 128, 128)
