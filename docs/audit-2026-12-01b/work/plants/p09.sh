# 09 peritem-forward-slot-not-advanced: rp_par_forward does not advance the forward slot for the later forwards of
# one evaluation (per-item batches run one forward per item), so under patch / PipeFusion item b's stale K/V is
# kept in, and read from, the slot item b-1 just wrote, every rank alike. Joint batches (one forward per
# evaluation) unaffected. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/parallel.c '    p->fwd_slot = eval == p->fwd_eval ? p->fwd_slot + 1 : 0;' '    extern int rp_audit20_flags; /* AUDIT20-09 */
    p->fwd_slot = eval == p->fwd_eval ? p->fwd_slot + ((rp_audit20_flags & 128) ? 0 : 1) : 0;'
