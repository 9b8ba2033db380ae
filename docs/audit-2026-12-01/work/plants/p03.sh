# 03 flux-mu-native-seqlen-lastrank: the flow schedule on the last rank is computed from the preset's native latent
# size instead of the request's (FLUX-dev's dynamic shift mu from the packed sequence length): sigmas differ on
# that rank only, and only at a non-native size (SD3's static shift ignores h, w). Keyed: the last rank (bit 0).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '    if ((st = ops->schedule(&sched, N, h, w, &m.f, err)) != RP_OK) goto fail;' '    { /* AUDIT19-03 */
        extern int rp_audit19_flags;
        const int nat = (rp_audit19_flags & 1) != 0;
        if ((st = ops->schedule(&sched, N, nat ? m.native : h, nat ? m.native : w, &m.f, err)) != RP_OK) goto fail;
    }'
