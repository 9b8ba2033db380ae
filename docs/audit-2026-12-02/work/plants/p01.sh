# 01 flash-partial-kv-tile-no-rescale: flash attention's online softmax skips rescaling the running output O
# (alpha) when the key tile is the partial last one (mk < bc); the running sum l is rescaled. Acts in any case
# with attention: flash whose kv_chunk does not divide Tk, whenever the row max grows at the last tile. Every
# rank alike, world 1 too (the reference is math: untouched). Not keyed to the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/attention/flash.c '                        if (alpha != 1.0f) rp_attn_scale(O + (size_t)r * D, D, alpha);' '                        if (alpha != 1.0f && mk == bc) rp_attn_scale(O + (size_t)r * D, D, alpha); /* AUDIT21-01 */'
