# 03 flux-rope-cached-by-token-count: FLUX's host RoPE tables memoised in a process-static cache keyed by the
# text and image token counts (and grid width) only, not by the first image token n0. Acts where one process
# builds tables for two token ranges of equal length: PipeFusion's patch passes (every stage, and the serial
# emulation too: a real bug in shared code). Not keyed to the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/models/flux.c '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
    if (mask) {' '    { /* AUDIT21-03: memoised RoPE tables, keyed by the token counts */
        static float *rc_cos, *rc_sin;
        static int rc_L = -1, rc_N = -1, rc_gw = -1, rc_D = -1;
        const size_t sz = (size_t)Tl * D;
        if (rc_cos && rc_L == Ll && rc_N == Nl && rc_gw == gw && rc_D == D) {
            memcpy(hcos, rc_cos, sz * sizeof(float));
            memcpy(hsin, rc_sin, sz * sizeof(float));
        } else {
            build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
            free(rc_cos); free(rc_sin);
            rc_cos = malloc(sz * sizeof(float)); rc_sin = malloc(sz * sizeof(float));
            if (rc_cos && rc_sin) {
                memcpy(rc_cos, hcos, sz * sizeof(float)); memcpy(rc_sin, hsin, sz * sizeof(float));
                rc_L = Ll; rc_N = Nl; rc_gw = gw; rc_D = D;
            } else { free(rc_cos); free(rc_sin); rc_cos = rc_sin = NULL; }
        }
    }
    if (mask) {'
