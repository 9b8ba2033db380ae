# 04 pf-sync-warmup-plus-one: PipeFusion counts its synchronous (warmup) evaluations one too many (`<=` for `<`),
# every stage alike: evaluation `warmup_steps` runs the whole image through the stages with fresh K/V where the
# asynchronous patch passes are due. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/pipefusion.c '    const int sync = p->fwd_eval < pf->warmup, fill = !sync && p->fresh_kv;' '    extern int rp_audit20_flags; /* AUDIT20-04 */
    const int sync = p->fwd_eval < pf->warmup + ((rp_audit20_flags & 128) ? 1 : 0), fill = !sync && p->fresh_kv;'
