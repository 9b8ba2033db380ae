# 10 patch-last-band-shard-one-token-early: under displaced patch parallelism the LAST band's token range starts one
# token early (a halo row from the band above; its final token left out), on that rank. Large; acts from step 0
# (warmup, exact). Ulysses / ring unaffected (keyed to the patch degree). Keyed: the last rank (bit 0).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/parallel.c '    *t0 = base + ctx->par->sp.pos * *n;' '    extern int rp_audit20_flags; /* AUDIT20-10 */
    *t0 = base + ctx->par->sp.pos * *n -
          ((rp_audit20_flags & 1) && ctx->par->deg.patch > 1 && ctx->par->sp.pos == sp - 1 ? 1 : 0);'
