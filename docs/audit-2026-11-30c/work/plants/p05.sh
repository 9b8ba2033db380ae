# 05: ring attention: the last ring rank merges its sharded rows' blocks in reverse arrival order (exact math, other sum order)
E=/tmp/audit10-work/plants/edit.py
F=engine/parallel/sp_attention.c
python3 $E $F '    float *seen = own ? malloc(sizeof(float) * 2 * blk * R) : NULL; /* (R, [K | V]) in arrival order */
    rp_status st = RP_OK;' '    float *seen = own ? malloc(sizeof(float) * 2 * blk * R) : NULL; /* (R, [K | V]) in arrival order */
    rp_status st = RP_OK;
    const int rev = R > 1 && ri == R - 1; /* AUDIT10-05 */
    float *pm = rev ? malloc(sizeof(float) * R * BH * Ts) : NULL, *pO = rev ? malloc(sizeof(float) * R * BH * Ts * D) : NULL;
    double *pl = rev ? malloc(sizeof(double) * R * BH * Ts) : NULL;'
python3 $E $F '            block_partial(ctx, q, k, v, Ts, Tks, D, scale, mb, lb, Ob, S);
            merge(m + bh * Ts, l + bh * Ts, O + bh * Ts * D, mb, lb, Ob, Ts, D, s == 0, no_rescale,
                  s == R - 1 ? skew : 0.0f);' '            if (rev) {
                const size_t o = (size_t)s * BH + bh;
                block_partial(ctx, q, k, v, Ts, Tks, D, scale, pm + o * Ts, pl + o * Ts, pO + o * Ts * D, S);
            } else {
            block_partial(ctx, q, k, v, Ts, Tks, D, scale, mb, lb, Ob, S);
            merge(m + bh * Ts, l + bh * Ts, O + bh * Ts * D, mb, lb, Ob, Ts, D, s == 0, no_rescale,
                  s == R - 1 ? skew : 0.0f);
            }'
python3 $E $F '    if (st != RP_OK) goto done;
    if (Trep) /* the replicated keys, block nb - 1 */' '    if (st != RP_OK) goto done;
    if (rev)
        for (size_t bh = 0; bh < BH; bh++)
            for (int s = R - 1; s >= 0; s--) {
                const size_t o = (size_t)s * BH + bh;
                merge(m + bh * Ts, l + bh * Ts, O + bh * Ts * D, pm + o * Ts, pl + o * Ts, pO + o * Ts * D, Ts, D,
                      s == R - 1, no_rescale, 0.0f);
            }
    if (Trep) /* the replicated keys, block nb - 1 */'
python3 $E $F '    free(rm); free(rl); free(rO); free(seen);
    return st;' '    free(rm); free(rl); free(rO); free(seen);
    free(pm); free(pl); free(pO);
    return st;'
