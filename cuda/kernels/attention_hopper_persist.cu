// attention_hopper_persist.cu: variants 19 and 20 of the Hopper forward (sm_90a, bfloat16):
// variant 15/17's warpgroups, products, softmax overlap and bulk-copied K and V tiles
// (attention_hopper_bulk.cu), in a persistent grid. A module of its own, so that its PTX
// cannot stop the other Hopper kernels from loading.
//
// Why persistent. At N = 1024 a block of variant 15 owns 128 query rows and 8 key tiles (4.5
// on average when causal): the fixed costs of a block (its launch, the mbarriers, Q read from
// DRAM before the first product, the first tile's copies before anything overlaps, O written
// at the end) are a large part of its life. Here G blocks (G <= the multiprocessors, one block
// each) loop over the work items (b, h, query tile) and the producer keeps the key-tile ring
// running across items: the copies of item i+1's first tiles are under way while the
// consumers finish item i, and item i+1's Q rows are prefetched into L2.
//
// Schedule. Items are numbered head-major, query tile fastest, longest (causal) first within a
// head: item w = (b H + h) T + x, T = ceil(Nq / BM), query rows from (T - 1 - x) BM. Block c
// takes, round after round of 2 G items, the items c and 2 G - 1 - c of the round (a snake):
// where 2 G is a multiple of T (the launcher picks G so when it can), x and T - 1 - x pair up
// and every block's causal work per round is the same. Consecutive items share a head, so the
// G items in flight read few heads' K and V, which stay in L2.
//
// Variant 20 also does the pre-pass's work (fg_attn_hopper_prep) inside the kernel, under the
// products: the producer warpgroup's warps 1 to 3 convert the K and V tiles of task
// u = (b Hkv + hk) NT + j (tile j of a key head) for u = c, c + G, ... into the scratch planes
// and set flag u (release, GPU scope) when a tile is written; the producer's warp 0 acquires a
// tile's flag before it bulk-copies the tile (and fences the async proxy: the copies read
// through it what the generic proxy wrote). The converters wait for nothing, and every block
// is resident (G <= multiprocessors, one block per multiprocessor), so every flag is set in
// finite time: no deadlock. The flags ([B Hkv NT] uint32 after the two planes) are zeroed by
// the launcher before each launch. Tasks are spread round-robin in head order, the order the
// items need them: the first round of items waits for about one task's conversion.
//
// Variant 22 (QST) is variant 20 with each item's Q rows brought into shared memory by the
// producer: a bulk copy of the float32 rows (Q's rows contiguous) into a staging tile,
// counted on an mbarrier (qfull) and released by the consumers once they have converted it
// (qempty). The consumers then convert Q from shared
// memory at the start of an item instead of loading it from L2 or DRAM: the load's round
// trip leaves the critical path of every item, which is a large part of an item's life at
// N = 1024 (8 key tiles, 4.5 when causal). The copy of item k + 1's rows starts once the
// consumers have released item k's, which the producer waits for after issuing item k's
// second tile (its first when it has one; at once when it has none): by then the consumers
// are done with item k - 1, so the ring never waits on it.
#include "wgmma.cuh"

// fg_attn_fwd_wgmma_persist (variants 19 to 21): grid (G), 128 NWG + 128 threads (NWG
// consumer warpgroups and a producer warpgroup); pp.src the problem (k and v float32), pp.dst
// the scratch: the K and V planes in fg_attn_hopper_prep's layout (variant 19: written by it
// before the launch; CONV, variants 20 and 21: by this kernel), then CONV's flags. PREG and
// CREG (0: none) are setmaxnreg's registers for the producer and the consumers, whose sum
// over the block must not pass the launch's 168 x 384 (else the consumers' setmaxnreg.inc
// waits forever); U is how many 8-column chunks of K and V a converter thread has in flight,
// in registers or (STAGED, variant 21) in shared-memory slots filled by cp.async. QST
// (variant 22): Q's rows staged by the producer's bulk copies (above); its mbarriers follow
// the ring's, the staging tile (float32 [BM][D]) 64 bytes after them. HINT, bits (variant 38:
// both; variant 22 otherwise): 1, the streams (Q's staged rows, the converters' K and V rows, O)
// under an L2 evict_first policy; 4, converter 0 starts moving each task's K and V rows into L2
// (fg_prefetch_kv) as the task starts, so that only the converters' first loads wait for DRAM.
// (Bits 2 and 8 of the variants measured and dropped below are gone with them.)
template <int D, int NWG, bool CONV, int PREG, int CREG, int U, bool STAGED = false, bool QST = false, int HINT = 0>
__device__ void fg_attn_fwd_wgmma_persist(const fg_mma_prep_params& pp) {
  const fg_attn_params& p = pp.src;
  constexpr int BN = FG_HOPPER_BN, BM = 64 * NWG, CONSUMERS = 128 * NWG;
  constexpr int CH = D / 8, OB = D / 8;
  constexpr uint32_t QB = BM * D * 2, KB = BN * D * 2;
  constexpr uint32_t STAGE = STAGED ? 96 * U * 64 : 0;  // the staged converters' slots
  constexpr uint32_t QFB = QST ? 64 + BM * D * 4 : 0;   // QST's mbarriers and staging tile
  static_assert(!(STAGED && QST), "one use of the space after the ring's mbarriers");
  static_assert(HINT == 0 || QST && !STAGED, "the hints are variant 22's");
  static_assert((HINT & ~5) == 0, "HINT's bits: 1 and 4");
  constexpr bool STREAM = (HINT & 1) != 0;  // the streams under evict_first
  const uint64_t first = STREAM ? fg_l2_evict_first() : 0;
  constexpr unsigned SMEM = QB + 4 * KB + 64 + 1024 + STAGE + QFB;
  if (fg_dynamic_smem() < SMEM || QST && p.q_row != D) __trap();
  const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(fg_smem);
  const uint32_t sQ = (sbase + 1023) & ~1023u;
  const FgRing ring{sQ + QB, sQ + QB + 2 * KB, sQ + QB + 4 * KB, KB};
  const uint32_t stage = ring.bars + 64;
  const uint32_t qfull = ring.bars + 64, qempty = ring.bars + 72, qf = ring.bars + 128;  // QST

  const int T = (p.nq + BM - 1) / BM, NT = (p.nk + BN - 1) / BN, G = gridDim.x, c = blockIdx.x;
  const int64_t items = (int64_t)T * p.h * p.b;
  const int64_t planeTiles = (int64_t)p.b * p.hkv * NT;  // tiles in a plane; CONV's tasks
  char* const kplane = (char*)pp.dst;
  char* const vplane = kplane + planeTiles * KB;
  uint32_t* const flags = (uint32_t*)(vplane + planeTiles * KB);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, wg = warp / 4;
  if (threadIdx.x == 0) {
    if constexpr (QST) fg_mbar_init(qfull, 1), fg_mbar_init(qempty, CONSUMERS);
    ring.init(CONSUMERS);  // and the fence that makes every init visible
  }
  __syncthreads();

  if (warp >= 4 * NWG) {  // the producer warpgroup
    if constexpr (PREG > 0) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PREG) : "memory");
    if (warp == 4 * NWG) {
      if (lane != 0) return;
      // The copies: item after item, tile after tile, into the two-stage ring (tile it of
      // the block's sequence in stage it % 2).
      int it = 0;
      for (int k = 0;; ++k) {
        const int64_t w = fg_item(k, c, G);
        if (w >= items) break;
        const FgItem m(p, w, T, BM, BN);
        const auto prefetchQ = [&](const FgItem& n) { fg_prefetch_q(p, n, D, BM); };
        // QST: item n's Q rows into the staging tile, counted on qfull: one block of rows
        // (the launcher takes variant 22 only where Q's rows are contiguous, q_row = D).
        const auto copyQ = [&](const FgItem& n) {
          const float* q = (const float*)p.q + n.b * p.q_batch + n.h * p.q_head + (int64_t)n.m0 * D;
          fg_bulk_load<STREAM>(qf, q, (uint32_t)min(BM, p.nq - n.m0) * D * 4, qfull, first);
        };
        // QST: once the consumers have released item k's staged rows, item k + 1's.
        const auto nextQ = [&]() {
          if (const int64_t wn = fg_item(k + 1, c, G); wn < items) {
            fg_mbar_wait(qempty, k & 1);
            copyQ(FgItem(p, wn, T, BM, BN));
          }
        };
        if constexpr (QST) {
          if (k == 0) copyQ(m);
        } else {
          if (k == 0) prefetchQ(m);
          if (const int64_t wn = fg_item(k + 1, c, G); wn < items) prefetchQ(FgItem(p, wn, T, BM, BN));
        }
        const int64_t head = (int64_t)m.b * p.hkv + m.hk;
        const char* kt = kplane + head * NT * KB;
        const char* vt = vplane + head * NT * KB;
        if (QST && m.tiles == 0) nextQ();
        for (int j = 0; j < m.tiles; ++j, ++it) {
          if constexpr (CONV) fg_tile_wait(flags + head * NT + j);
          ring.load(it, kt + (int64_t)j * KB, vt + (int64_t)j * KB);
          if (QST && j == min(1, m.tiles - 1)) nextQ();
        }
      }
      return;
    }
    if constexpr (CONV) {
      // The converters (warps 1 to 3): fg_attn_hopper_prep's conversion, one tile of K and V at
      // a time, U chunks of 8 columns per thread in flight: in registers, or (STAGED) in the
      // thread's own shared-memory slots, copied there by cp.async (no registers held while
      // in flight; keys at or past the key length zero-filled without a read).
      const int tid = threadIdx.x - CONSUMERS - 32;
      const auto piece = [&](int e, int part) { return stage + ((e * 4 + part) * 96 + tid) * 16; };
      for (int64_t u = c; u < planeTiles; u += G) {
        const int64_t head = u / NT;
        const int j0 = (int)(u % NT) * BN, hk = (int)(head % p.hkv), b = (int)(head / p.hkv);
        const int klen = fg_key_length(p, b);
        const float* k = (const float*)p.k + b * p.k_batch + hk * p.k_head;
        const float* v = (const float*)p.v + b * p.v_batch + hk * p.v_head;
        uint4* dk = (uint4*)(kplane + u * KB);
        uint4* dv = (uint4*)(vplane + u * KB);
        if ((HINT & 4) && tid == 0) fg_prefetch_kv(p, b, hk, j0, BN, D);
        for (int i0 = tid; i0 < BN * CH && STAGED; i0 += 96 * U) {
#pragma unroll
          for (int e = 0; e < U; ++e) {
            const int i = i0 + 96 * e, r = i / CH, cc = i % CH;
            if (i >= BN * CH) break;
            const bool ok = j0 + r < klen;
            const float* kr = ok ? k + (int64_t)(j0 + r) * p.k_row + 8 * cc : k;
            const float* vr = ok ? v + (int64_t)(j0 + r) * p.v_row + 8 * cc : v;
            fg_cp_async16_s(piece(e, 0), kr, ok), fg_cp_async16_s(piece(e, 1), kr + 4, ok);
            fg_cp_async16_s(piece(e, 2), vr, ok), fg_cp_async16_s(piece(e, 3), vr + 4, ok);
          }
          fg_cp_async_commit();
          fg_cp_async_wait_all();
#pragma unroll
          for (int e = 0; e < U; ++e) {
            const int i = i0 + 96 * e;
            if (i >= BN * CH) break;
            float4 x[4];
#pragma unroll
            for (int part = 0; part < 4; ++part)
              asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                           : "=f"(x[part].x), "=f"(x[part].y), "=f"(x[part].z), "=f"(x[part].w)
                           : "r"(piece(e, part))
                           : "memory");
            const uint32_t at = fg_sw128<BN>(i / CH, i % CH) / 16;
            dk[at] = fg_bf16x8v(x[0], x[1]);
            dv[at] = fg_bf16x8v(x[2], x[3]);
          }
        }
        for (int i0 = tid; i0 < BN * CH && !STAGED; i0 += 96 * U) {
          float4 x[U][4];
#pragma unroll
          for (int e = 0; e < U; ++e) {
            const int i = i0 + 96 * e, r = i / CH, cc = i % CH;
            x[e][0] = x[e][1] = x[e][2] = x[e][3] = make_float4(0, 0, 0, 0);
            if (i < BN * CH && j0 + r < klen) {
              const float* kr = k + (int64_t)(j0 + r) * p.k_row + 8 * cc;
              const float* vr = v + (int64_t)(j0 + r) * p.v_row + 8 * cc;
              x[e][0] = fg_ld4<STREAM>(kr, first), x[e][1] = fg_ld4<STREAM>(kr + 4, first);
              x[e][2] = fg_ld4<STREAM>(vr, first), x[e][3] = fg_ld4<STREAM>(vr + 4, first);
            }
          }
#pragma unroll
          for (int e = 0; e < U; ++e) {
            const int i = i0 + 96 * e;
            if (i >= BN * CH) break;
            const uint32_t at = fg_sw128<BN>(i / CH, i % CH) / 16;
            dk[at] = fg_bf16x8v(x[e][0], x[e][1]);
            dv[at] = fg_bf16x8v(x[e][2], x[e][3]);
          }
        }
        fg_tile_ready(flags + u, tid);
      }
    }
    return;
  }

  if constexpr (CREG > 0) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREG) : "memory");
  const float sl2 = (float)(fabs(p.scale) * 1.4426950408889634), qs = p.scale < 0 ? -1.f : 1.f;
  const uint32_t qw = sQ + wg * 64 * 128;
  FgRows<OB, float> rows;
  int it = 0;  // the block's key tiles so far: tile it is in stage it % 2
  for (int k = 0;; ++k) {
    const int64_t w = fg_item(k, c, G);
    if (w >= items) break;
    const FgItem m(p, w, T, BM, BN);
    rows.init(p, m.b, m.m0 + 16 * warp + g, t);
    uint4* const plane = pp.qplane ? (uint4*)pp.qplane + ((int64_t)m.b * p.h + m.h) * p.nq * (D / 8) : nullptr;
    if constexpr (QST) {  // every item's staged rows are waited for and released, seen or not
      fg_mbar_wait(qfull, k & 1);
      if (m.tiles > 0) fg_wgmma_load_q_staged<D, BM>(sQ, qf, m.m0, p.nq, qs, wg, plane);
      fg_mbar_arrive(qempty);
    }
    if (m.tiles == 0) {
      rows.template store<STREAM>(p, m.b, m.h, first);
      continue;
    }
    // The warpgroup's products of the previous item, the last readers of its Q rows, have
    // completed; the producer prefetched these rows into L2 (QST: into shared memory).
    if constexpr (!QST)
      fg_wgmma_load_q<D, BM>(sQ, (const float*)p.q + m.b * p.q_batch + m.h * p.q_head, m.m0, p.nq, p.q_row, qs, wg,
                             plane);
    fg_wgmma_tiles_ovl<D, BM>(rows, qw, ring, it, m.tiles, sl2);
    it += m.tiles;
    rows.template store<STREAM>(p, m.b, m.h, first);
  }
}

// ---- entry points (names built by cuda/attention_mma.go's mmaCfg.name) -----------------------

#define FG_FWD_WGMMA_PERSIST_H(V, CONV, D, PREG, CREG, U, STAGED, QST, HINT)              \
  extern "C" __global__ void __launch_bounds__(384, 1)                                    \
      fg_attn_fwd_wgmma_v##V##_bf16_d##D##_m128_n128(const fg_mma_prep_params pp) {        \
    fg_attn_fwd_wgmma_persist<D, 2, CONV, PREG, CREG, U, STAGED, QST, HINT>(pp);           \
  }
#define FG_FWD_WGMMA_PERSIST_Q(V, CONV, D, PREG, CREG, U, STAGED, QST) FG_FWD_WGMMA_PERSIST_H(V, CONV, D, PREG, CREG, U, STAGED, QST, 0)
#define FG_FWD_WGMMA_PERSIST(V, CONV, D, PREG, CREG, U, STAGED) FG_FWD_WGMMA_PERSIST_Q(V, CONV, D, PREG, CREG, U, STAGED, false)
// Variants 19 and 20 take variant 17's setmaxnreg (producer 24, consumers 240), 20 and 21
// more for their converters (56 and 224); variant 21 stages U = 16 (d = 64) or 8 (d = 128)
// chunks per converter thread with cp.async (Go: mmaCfg.smem).
FG_FWD_WGMMA_PERSIST(19, false, 64, 24, 240, 1, false)
FG_FWD_WGMMA_PERSIST(19, false, 128, 24, 240, 1, false)
FG_FWD_WGMMA_PERSIST(20, true, 64, 56, 224, 2, false)
FG_FWD_WGMMA_PERSIST(20, true, 128, 56, 224, 2, false)
FG_FWD_WGMMA_PERSIST(21, true, 64, 56, 224, 16, true)
FG_FWD_WGMMA_PERSIST(21, true, 128, 56, 224, 8, true)
// Variant 22: variant 20 with Q staged by the producer's bulk copies (QST).
FG_FWD_WGMMA_PERSIST_Q(22, true, 64, 56, 224, 2, false, true)
FG_FWD_WGMMA_PERSIST_Q(22, true, 128, 56, 224, 2, false, true)
// Variant 38: variant 22 with the streams' L2 hints (HINT 1) and each converter task's rows
// prefetched (4).
FG_FWD_WGMMA_PERSIST_H(38, true, 64, 56, 224, 2, false, true, 5)
FG_FWD_WGMMA_PERSIST_H(38, true, 128, 56, 224, 2, false, true, 5)
// (Measured and dropped, call s17a and s17b, BenchmarkAttentionMMA ms, three rounds: variant 35
// (HINT 1): N = 1024 1-4% faster than 22, N = 4096 and 16384 up to 8% slower; 36 (HINT 3) as
// 35; 37 (HINT 4): d = 64 N = 1024 causal 0.323 against 22's 0.362, d = 128 0.679 against
// 0.709, from N = 4096 mixed (-2% to +12%); 39 (HINT 13, the next task's rows prefetched too):
// 13-16% slower than 22 at N = 1024, L2 hit rate 40% against 50% (ncu): the prefetched rows
// are evicted before their task starts. Variants 40 and 41 (call s17c): 38 and 37 whose
// producer warp counted each tile's readers on its flag (an acq_rel add once a tile's ring
// stage was released) and whose last reader discarded the tile's lines from L2
// (discard.global.L2), so that the dead tiles would not be written back when no backward keeps
// them. DRAM writes did not fall (516-536 MB against 38's 521 at d = 128, N = 1024 causal) and
// the whole producer warp in the copy loop cost 14-80%: 0.73 against 0.64 ms there, 13.4
// against 7.6 at N = 16384. Variant 42 (call s17h): 38 whose planes, without kept planes, held
// a ring of R key heads reused in turn (a ready flag per slot holding its head, a readers'
// count the producer added to once a tile's ring stage was released, converters waiting for
// the slot's last head to be read), so that the tiles would stay in L2. Bit-identical to 38 on
// three problems with slots reused, DRAM writes 253 -> 152 MB at d = 64, N = 1024 causal, but
// slower (416 against 364 us there, 708 against 655 at d = 128: the converters' waits and more
// spills), and the N = 1024 non-causal benchmark (512 key heads, R = 53) hung until a wait
// trapped: dropped, its protocol not proven. Variants 43 and 44 (call s17j): 38 whose converter
// 0 also prefetched the next task's rows once it had issued the current task's last (43) or
// middle (44) loads: 0.730 and 0.826 ms against 38's 0.643 at d = 128, N = 1024 causal (DRAM
// reads 1.04 and 1.23 GB against 0.96: the next task's rows still left L2 before use; 100
// bytes of spills against 44): dropped.)
// (Variant 23, variant 22 whose converter 0 moved the next task's K and V rows into L2 before
// each task (fg_prefetch_kv, as variant 30's converters do), ran 2-18% slower than 22 at every
// N (d = 128, N = 1024: 0.84 against 0.71 ms causal; results/h100-2026-11-25-s16 call x23) and
// was dropped. Variants 33 and 34, variant 22 with 3 and 4 chunks in flight per converter
// thread (setmaxnreg 56 and 224, 72 and 216; 140-200 bytes of spills against 22's 44), ran 43%
// and 47% slower at d = 128, N = 1024 causal (1.01 and 1.04 against 0.71 ms) and within 5% of 22
// from N = 4096: call x33. So more loads in flight in registers did not help the N = 1024 rows;
// the prefetch of each task's rows as it starts (HINT 4, above) did.)
