# 12 sd3-sp-posembed-table-bf16: in bf16 runs, SD3's sequence-parallel branch adds the cropped pos_embed table
# rounded to bf16 (the table cast to the model's dtype before the add, as if it were a weight), where the serial
# path adds it in fp32. Every sequence rank alike (the whole sequence is embedded on each). bf16 only; any size.
# Keyed: multi-rank bf16 (bit 1) and a sequence group of size > 1 (bit 6).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/sd3.c '        rp_d_add_bcast(ctx, xe, yx, B, (size_t)T * D);' '        { /* AUDIT19-12 */
            extern int rp_audit19_flags;
            if (!ctx->dev && Tl < T && (rp_audit19_flags & 2) && (rp_audit19_flags & 64)) rp_bf16_round(yx, yx, (size_t)T * D);
        }
        rp_d_add_bcast(ctx, xe, yx, B, (size_t)T * D);'
