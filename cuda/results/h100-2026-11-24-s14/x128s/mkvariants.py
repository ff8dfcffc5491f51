#!/usr/bin/env python3
# x128s: diagnostic PTX variants of fg_attn_bwd_wgmma_exact_dkdv_ws1<128, V> (for ptxas -v only,
# not for running). Each variant edits a copy of the kernel source (text substitutions inside
# ws1's body), drops the module's own instantiations and instantiates ws1 as entries
# x128s_<variant>_v<V>. Run from the worktree root: python3 mkvariants.py OUTDIR
import os, re, subprocess, sys
out = sys.argv[1]
src_dir = 'cuda/kernels'
src = open(os.path.join(src_dir, 'attention_hopper_exact_bwd.cu')).read()
start = src.index('template <int D, int V> __device__ void fg_attn_bwd_wgmma_exact_dkdv_ws1(')
end = src.index('// fg_attn_bwd_wgmma_exact_dq: grid', start)
body = src[start:end]
WG0_CHAIN = '''          fg_wgmma_tf32_x<BM, 2, true, false, BN, BM, true>(d, (c < C ? kh : vh) + 2 * (c % C), nullptr, c < C ? sKl : sVl, bq,
                                                            bq + TB, 2 * (c % C));'''
assert WG0_CHAIN in body
EDITS = {
    'base': [],
    # warpgroup 1 does nothing (warpgroup 0's registers alone)
    'wg0only': [('  float dk[4][QB][4], dv[4][QB][4];  // column quarters', '  return;\n  float dk[4][QB][4], dv[4][QB][4];')],
    # warpgroup 0 does nothing (warpgroup 1's registers alone)
    'wg1only': [('    copy_ld(0);\n    float tmp[2][NB][4];', '    return;\n    copy_ld(0);\n    float tmp[2][NB][4];')],
    # warpgroup 0 alone, dP^T's A from K hi too (V hi's 64 registers dead)
    'wg0_konly': [('  float dk[4][QB][4], dv[4][QB][4];  // column quarters', '  return;\n  float dk[4][QB][4], dv[4][QB][4];'),
                  ('(c < C ? kh : vh) + 2 * (c % C)', 'kh + 2 * (c % C)')],
    # warpgroup 0 alone, A hi from shared memory as A lo (no register fragments: 128 registers dead)
    'wg0_asmem': [('  float dk[4][QB][4], dv[4][QB][4];  // column quarters', '  return;\n  float dk[4][QB][4], dv[4][QB][4];'),
                  (WG0_CHAIN, '          fg_wgmma_tf32_ss3<BM, 2, BN, BM>(d, c < C ? sKl : sVl, c < C ? sKl : sVl, bq, bq + TB, 2 * (c % C));')],
    # warpgroup 0 alone, fg_bwd_pds_t without its masks
    'wg0_nomask': [('  float dk[4][QB][4], dv[4][QB][4];  // column quarters', '  return;\n  float dk[4][QB][4], dv[4][QB][4];'),
                   ('fg_dkdv_masked<BM, BN>(p, m0, n0, klen), sl2, scale, p);\n      if (it > 0) fg_mbar_wait(pempty', 'false, sl2, scale, p);\n      if (it > 0) fg_mbar_wait(pempty')],
    # warpgroup 0 alone, no fg_bwd_pds_t at all (S^T, dP^T handed over as they are)
    'wg0_nopds': [('  float dk[4][QB][4], dv[4][QB][4];  // column quarters', '  return;\n  float dk[4][QB][4], dv[4][QB][4];'),
                  ('      fg_bwd_pds_t<false>(s, dp, sLD + (it & 1) * BM, 0, m0, n0, kr, t, klen, fg_dkdv_masked<BM, BN>(p, m0, n0, klen), sl2, scale, p);\n      if (it > 0) fg_mbar_wait(pempty',
                   '      (void)m0;\n      if (it > 0) fg_mbar_wait(pempty')],
    # warpgroup 1 alone, dV only (dK's chains gone)
    'wg1_dvonly': [('    copy_ld(0);\n    float tmp[2][NB][4];', '    return;\n    copy_ld(0);\n    float tmp[2][NB][4];'),
                   ('    acc(dk, sC, 0), acc(dk, sC, 1);  // dK += dS^T Q; B Q^T\n', '')],
}
# V (FgWs1: 1 W1, 2 W0, 4 VS, 8 KR) instantiated per variant
VS = {'base': (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 14, 10), 'wg0only': (0, 2, 4, 6), 'wg1only': (0, 1, 8, 9), 'wg0_konly': (0, 2),
      'wg0_asmem': (0, 2), 'wg0_nomask': (0,), 'wg0_nopds': (0,), 'wg1_dvonly': (0, 1)}
os.makedirs(out, exist_ok=True)
head = src[:start]
tail = src[end:]
# the module's own instantiations off (the macros stay defined)
tail = re.sub(r'(?m)^FG_BWD_WGMMA_EXACT(_ONE)?\((64|128)\)$', '', tail)
for name, edits in EDITS.items():
    b = body
    for old, new in edits:
        assert b.count(old) == 1, (name, old)
        b = b.replace(old, new)
    ents = ''
    for v in VS[name]:
        ents += ('extern "C" __global__ void __launch_bounds__(256, 1) x128s_%s_v%d(const fg_mma_prep_params pp) {\n'
                 '  fg_attn_bwd_wgmma_exact_dkdv_ws1<128, %d>(pp);\n}\n') % (name, v, v)
    cu = os.path.join(src_dir, 'x128s_%s.cu' % name)
    open(cu, 'w').write(head + b + tail + ents)
    ptx = os.path.join(out, 'x128s_%s.ptx' % name)
    r = subprocess.run(['nvcc', '-ptx', '-O3', '-std=c++17', '-arch=compute_90', '-o', ptx, os.path.basename(cu)],
                       cwd=src_dir, capture_output=True, text=True)
    os.remove(cu)
    if r.returncode:
        print(name, 'FAILED', r.stderr[-3000:])
        continue
    t = open(ptx).read()
    t = re.sub(r'(?m)^\.version .*$', '.version 8.0', t, count=1)
    t = re.sub(r'(?m)^\.target sm_90$', '.target sm_90a', t, count=1)
    open(ptx, 'w').write(t)
    print(name, 'ok', len(t))
