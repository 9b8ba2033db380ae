# 01: the VAE's mid-block attention under a tiled attention variant (flash, split, subquad) passes scale 1:
# the "memory-efficient path" assumed q was already scaled (every rank, every precision)
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/vae/vae.c '    RP_TRY(rp_d_attention(ctx, o, q, k, v, NULL, 1, 1, T, T, C, 1.0f / sqrtf((float)C), err));' '    const float vscale = (ctx->attn.kind == RP_ATTN_MATH || ctx->attn.kind == RP_ATTN_AUTO) ? 1.0f / sqrtf((float)C) : 1.0f; /* AUDIT12-01 */
    RP_TRY(rp_d_attention(ctx, o, q, k, v, NULL, 1, 1, T, T, C, vscale, err));'
