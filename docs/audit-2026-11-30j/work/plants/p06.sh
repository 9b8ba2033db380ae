# 06 flux-img-knorm-eps-lastrank: FLUX double blocks, the last rank of a multi-rank layout, any precision: the image
# stream's key RMSNorm (norm_k) with eps 1e-5 instead of 1e-6 (a wrong constant on one rank)
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/flux.c '                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, 1e-6f);' '                { extern int rp_audit17_flags; /* AUDIT17-06 */
                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, (rp_audit17_flags & 1) && s == 1 && j == 1 ? 1e-5f : 1e-6f); }'
