# 07 te-empty-prompt-pooled-past-eos-cfgrank1: the pooled vector of the empty prompt (BOS, EOS: the unconditional
# text) is taken from the row after EOS (the first pad row) on cfg rank 1, the rank that evaluates the
# unconditional half under cfg parallelism. Keyed: cfg rank 1 (bit 3) and a 2-token prompt.
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/text_encoder.c '    if (pooled_out) rp_linear(ctx, pooled_out, w->h + (size_t)eos * D, &m->proj_pooled, 1);' '    extern int rp_audit19_flags; /* AUDIT19-07 */
    const int pe = (rp_audit19_flags & 8) && n <= 2 && n < L ? n : eos;
    if (pooled_out) rp_linear(ctx, pooled_out, w->h + (size_t)pe * D, &m->proj_pooled, 1);'
