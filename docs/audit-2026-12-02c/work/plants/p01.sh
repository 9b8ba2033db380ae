# 01 flash-kv-tile-remainder-runs-math (audit 22's 01, re-created): flash attention whose key count is not a multiple of
# its key tile silently falls back to the math kernel (a "remainder not supported" shortcut). Keyed by variant and size;
# every rank, world 1 too. The fallback is what math itself notes (rp_attention_math notes "math").
E=/work/audit23-out/work/edit.py
python3 $E engine/attention/flash.c '    rp_attn_note_ran(ctx->trace, "flash", q_chunk, kv_chunk);' '    if (Tk % kv_chunk) /* AUDIT23-01: a partial last key tile is not supported: math */
        return rp_attention_math(ctx, out, q, k, v, key_mask, B, H, Tq, Tk, D, scale, err);
    rp_attn_note_ran(ctx->trace, "flash", q_chunk, kv_chunk);'
