# 05 flux-mu-local-seqlen-sp: FLUX-dev's schedule under sequence parallelism (EVERY rank): mu from the image
# sequence length of the rank's own shard (width / sp), not the whole image's; any precision. Only sequence-
# parallel layouts reach it
. /work/main/docs/audit-2026-11-30j/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;' '    { extern int rp_audit17_sp; /* AUDIT17-05 */
    if ((st = ops->schedule(&sched, N, h, ops->family == RP_FAMILY_FLUX && w % (2 * rp_audit17_sp) == 0 ? w / rp_audit17_sp : w, &m.f, err)) != RP_OK) goto fail; }'
