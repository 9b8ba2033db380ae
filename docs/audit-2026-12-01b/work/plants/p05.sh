# 05 pf-last-patch-shard-one-token-early: under PipeFusion's patch passes the LAST pipeline patch's token range
# starts one token early (a halo row taken from the patch before; its final token left out), every stage alike.
# Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/parallel/parallel.c '        len = T / M;
        base = m * len;' '        extern int rp_audit20_flags; /* AUDIT20-05 */
        len = T / M;
        base = m * len - ((rp_audit20_flags & 128) && m > 0 && m == M - 1 ? 1 : 0);'
