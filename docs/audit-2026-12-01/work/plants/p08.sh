# 08 sd3-sp-slice-one-row-late-lastrank: SD3's sequence-parallel slice of the embedded image (xe -> xs) on the last
# sequence rank starts one row late: its Tl rows are [t0 + 1, t0 + Tl], one past its shard's end (item b's last
# rank reads item b + 1's first image row); the last item's last row is left as xs held. Keyed: the last rank of a
# sequence group of size > 1 (bit 2).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/sd3.c '            rp_d_copy(ctx, xs + (size_t)b * Tl * D, xe + ((size_t)b * T + t0) * D, (size_t)Tl * D);' '        { /* AUDIT19-08 */
            extern int rp_audit19_flags;
            const int late = (rp_audit19_flags & 4) != 0;
            const size_t rows = late && b == B - 1 ? (size_t)Tl - 1 : (size_t)Tl;
            rp_d_copy(ctx, xs + (size_t)b * Tl * D, xe + ((size_t)b * T + t0 + late) * D, rows * D);
        }'
