# 15 flux-rope-ring-shard-off-by-one: FLUX's RoPE table for a ring shard that does not start at token 0 is built from
# position n0 - 1 (the previous shard's last token): every image token of ring ranks > 0's shards one position early.
# Keyed by ring > 1 and the shard's start (ulysses-only layouts do not act).
E=/work/audit23-out/work/edit.py
python3 $E engine/models/flux.c '    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));' '    build_rope(hcos, hsin, cfg, Ll, ctx->par && ctx->par->ring.size > 1 && n0 > 0 ? n0 - 1 : n0, Nl, H / 2, gw, /* AUDIT23-15 */
               rp_par_pos_shift(ctx));'
