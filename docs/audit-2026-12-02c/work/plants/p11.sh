# 11 sliced-attention-mask-first-slice-only: split (sliced) attention applies the key mask to the first query slice
# only (the mask hoisted out of the slice loop as "once"). Only masked attention acts: the text encoder's (32 tokens,
# pad keys masked); its later query slices attend pad keys, which reaches a prompt's valid tokens only when the prompt
# is longer than one slice (n tokens > q_chunk): "a red fox in the snow" (23 tokens) at q 16, not "two cats" (10) or
# "" (2). DiT has no text encoder; the transformers' joint attention passes no mask (to be seen).
E=/work/audit23-out/work/edit.py
python3 $E engine/attention/attention.c '                rp_attn_mask_cols(S, n, Tk, Tk, bh.m);
                rp_softmax_rows(S, n, Tk);' '                rp_attn_mask_cols(S, n, Tk, Tk, i0 == 0 ? bh.m : NULL); /* AUDIT23-11 */
                rp_softmax_rows(S, n, Tk);'
