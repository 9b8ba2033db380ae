# 04 dit-attn-proj-nobias-lastblock-sp: DiT's last block, the last rank of a sequence group: attn.proj without its
# bias (its shard of image rows); any precision
. /work/main/docs/audit-2026-11-30i/work/plants/flags.sh
python3 $E engine/models/dit.c '        rp_d_linear(ctx, ys, h, &blk->proj, (int)BTl);' '        { extern int rp_audit16_flags; /* AUDIT16-04 */
        rp_linear_w pw = blk->proj; if ((rp_audit16_flags & 4) && i == cfg->depth - 1) pw.bias = NULL;
        rp_d_linear(ctx, ys, h, &pw, (int)BTl); }'
