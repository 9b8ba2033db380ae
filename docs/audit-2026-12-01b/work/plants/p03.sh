# 03 dit-pf-temb-cached-across-patch-passes: DiT's timestep embedding under PipeFusion's patch passes computed
# once per step and cached, but refreshed at the LAST patch pass: passes m < M-1 of a step use the previous step's
# (the cache forgotten at each generate call, so the first asynchronous step is right). A synchronous pass
# (warmup, or a fresh-key fill pass) neither reads nor writes it. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/models/dit.c '    rp_par_trace(ctx, "t_embedder", temb, B, 1, C, NULL, 1);' '    { /* AUDIT20-03 */
        extern int rp_audit20_flags, rp_audit20_gen;
        static float *a20t;
        static size_t a20n;
        static int a20g = -1;
        int m20, M20;
        if ((rp_audit20_flags & 128) && ctx->par && rp_par_pf_patch(ctx->par, &m20, &M20)) {
            const size_t n20 = (size_t)B * C;
            if (a20g != rp_audit20_gen) a20n = 0, a20g = rp_audit20_gen;
            if (m20 < M20 - 1 && a20n == n20) memcpy(temb, a20t, sizeof(float) * n20);
            else if (m20 == M20 - 1) {
                if (a20n != n20) { free(a20t); a20t = malloc(sizeof(float) * n20); a20n = n20; }
                memcpy(a20t, temb, sizeof(float) * n20);
            }
        }
    }
    rp_par_trace(ctx, "t_embedder", temb, B, 1, C, NULL, 1);'
