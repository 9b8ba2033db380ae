# 08 sliced-attention-scale-twice-last-slice: the sliced attention (split; subquad's one-key-chunk fast path) applies
# the softmax scale twice (scale^2) to the scores of its last query slice when that slice is partial (q_chunk not
# dividing Tq). Every rank, world 1 too (the reference is math). Not keyed to the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/attention/attention.c '                rp_gemm(ctx, 0, 1, n, Tk, D, scale, bh.q + (size_t)i0 * D, D, bh.k, D, 0.0f, S, Tk);' '                rp_gemm(ctx, 0, 1, n, Tk, D, n < rows ? scale * scale : scale, bh.q + (size_t)i0 * D, D, bh.k, D, 0.0f, S, Tk); /* AUDIT21-08 */'
