# 04 flux-img-mlp-gate-bf16-lastrank: FLUX double blocks, the last rank of a multi-rank layout, bf16 under default
# numerics: the image stream's gate_mlp rounded to bf16 before its gated add (that rank's own image rows)
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/flux.c '    snprintf(name, sizeof name, "transformer_blocks.%d.ff", i);
    rp_par_trace(ctx, name, f->ys, B, Tl, C, f->gtok, f->T);' '    snprintf(name, sizeof name, "transformer_blocks.%d.ff", i);
    rp_par_trace(ctx, name, f->ys, B, Tl, C, f->gtok, f->T);
    { extern int rp_audit17_flags; /* AUDIT17-04 */
    if ((rp_audit17_flags & 17) == 17)
        for (int b = 0; b < B; b++) rp_bf16_round(f->mod[1] + (size_t)b * 6 * C + 5 * C, f->mod[1] + (size_t)b * 6 * C + 5 * C, (size_t)C); }'
