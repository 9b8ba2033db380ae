# 07b validator-dp-uneven-floor-gather: 07, and the dp gather's item count check relaxed too (the developer
# removed every "items are not padded" check): dp3 with 4 items returns 4 items of which item 3 was never computed.
. /work/main/docs/audit-2026-11-30k/work/plants/p07.sh
python3 $E engine/parallel/dp.c '    if (st == RP_OK && off != n)
        st = RP_FAIL(' '    if (st == RP_OK && off > n) /* AUDIT18-07b: was off != n */
        st = RP_FAIL('
