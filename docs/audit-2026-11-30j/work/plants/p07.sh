# 07 dit-uncond-seg-yemb-bf16: DiT under cfg_parallel, the UNCONDITIONAL SEGMENT (segment 1, whichever cfg rank
# evaluates it), bf16 under default numerics: the null-class embedding rows rounded to bf16. Keyed to a part (the
# cfg half), not to a rank
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/dit.c '    rp_par_trace(ctx, "y_embedder", yemb, B, 1, C, NULL, 1);' '    { extern int rp_audit17_flags; /* AUDIT17-07 */
    if ((rp_audit17_flags & 16) && rp_par_batch_segment(ctx) == 1) rp_bf16_round(yemb, yemb, (size_t)B * C); }
    rp_par_trace(ctx, "y_embedder", yemb, B, 1, C, NULL, 1);'
