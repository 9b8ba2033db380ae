# 11b flux-joint-knorm-eps-allrows: 11's fault in joint batches (every forward, every rank alike, world > 1): the
# control for 11 (is it the per-item path that hides it?).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/models/flux.c '                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, 1e-6f);' '                { extern int rp_audit18_flags; /* AUDIT18-11b */
                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, (rp_audit18_flags & 128) && s == 1 && j == 1 ? 1e-5f : 1e-6f); }'
