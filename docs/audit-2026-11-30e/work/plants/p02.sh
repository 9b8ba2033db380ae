# 02: flash attention reads the key mask of kv tile 0 for every kv tile (the mask pointer not advanced by j0);
# every rank, every precision; acts only on calls with a key mask and more than one kv tile
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/attention/flash.c '                    rp_attn_mask_cols(S, n, mk, mk, bh.m ? bh.m + j0 : NULL);' '                    rp_attn_mask_cols(S, n, mk, mk, bh.m); /* AUDIT12-02 */'
