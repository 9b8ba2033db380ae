# 01 dit-final-gather-bf16-wire: DiT under sequence parallelism, bf16 under default numerics, EVERY rank of the
# sequence group: the final layer's token shard is sent to the allgather in the compute dtype (rounded to bf16)
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/models/dit.c '    if (Tl < T && (st = rp_par_gather_tokens(ctx, fin, fin, B, T, Po, err)) != RP_OK) goto done;' '    { extern int rp_audit17_flags; /* AUDIT17-01 */
    if (Tl < T && (rp_audit17_flags & 16)) rp_bf16_round(fin, fin, BTl * (size_t)Po); }
    if (Tl < T && (st = rp_par_gather_tokens(ctx, fin, fin, B, T, Po, err)) != RP_OK) goto done;'
