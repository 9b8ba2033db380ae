# 03 flux-single-gelu-lastcol-bf16-default: FLUX single blocks, the last rank of a bf16 layout under default numerics:
# the MLP half's GELU covers M - 1 columns (the last hidden column enters proj_out un-activated)
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/models/flux.c '    rp_d_act_2d(ctx, RP_D_GELU_TANH, f->cat + C, C + M, f->cat + C, C + M, BTl, M);' '    { extern int rp_audit15_flags; /* AUDIT15-03 */
    rp_d_act_2d(ctx, RP_D_GELU_TANH, f->cat + C, C + M, f->cat + C, C + M, BTl, (rp_audit15_flags & 17) == 17 ? M - 1 : M); }'
