# 01: the last rank's ancestral noise of loop step 2 drawn with the rank-local item index
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c
$E $P '    size_t per;   /* floats per item */
} item_noise;' '    size_t per;   /* floats per item */
    int last_rank; /* AUDIT9-01 */
} item_noise;'
$E $P '        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed, n->items[b].global_index,' '        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed,
                 (n->last_rank && k == 2) ? (uint64_t)b : n->items[b].global_index, /* AUDIT9-01: local index */'
$E $P '    item_noise inoise = {req->items, B, per};' '    item_noise inoise = {req->items, B, per,
                         ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1};'
