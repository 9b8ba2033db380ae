# 01 patch-sync-warmup-plus-one: displaced patch parallelism counts its synchronous (warmup) evaluations one too
# many (`<=` for `<`, every rank alike): evaluation `warmup_steps` also exchanges fresh K/V for every band, so the
# layout computes an exact step where DistriFusion's stale one is due. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/patch.c '    const int sync = p->fwd_eval < pp->warmup || p->fresh_kv, others = sync || e->valid;' '    extern int rp_audit20_flags; /* AUDIT20-01 */
    const int sync = p->fwd_eval < pp->warmup + ((rp_audit20_flags & 128) ? 1 : 0) || p->fresh_kv,
              others = sync || e->valid;'
