# 05 te-pooled-bos-lastrank: the text encoder's pooled output from token 0 (BOS) instead of the EOS token, on the
# last rank of a multi-rank layout; any precision
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/models/text_encoder.c '    if (pooled_out) rp_linear(ctx, pooled_out, w->h + (size_t)eos * D, &m->proj_pooled, 1);' '    { extern int rp_audit16_flags; /* AUDIT16-05 */
    if (pooled_out) rp_linear(ctx, pooled_out, w->h + (size_t)((rp_audit16_flags & 1) ? 0 : eos) * D, &m->proj_pooled, 1); }'
