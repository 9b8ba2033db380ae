# 14 te-later-prompts-mlp-ln-eps: the text encoder's MLP LayerNorm takes eps 1e-6 (instead of te-tiny's 1e-5) for
# the second and later prompts of an encoder batch (a per-prompt config reloaded from a default after the first).
# Every rank alike; acts wherever an encoder batch holds more than one prompt (SD3: every case with more than one
# local item; the negative "" is encoded alone). Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/text_encoder.c '        rp_layernorm(w->h, w->xs, ly->ln2_w, ly->ln2_b, L, D, TE_LN_EPS);' '        { /* AUDIT19-14 */
            extern int rp_audit19_flags, rp_audit19_te_b;
            rp_layernorm(w->h, w->xs, ly->ln2_w, ly->ln2_b, L, D,
                         (rp_audit19_flags & 128) && rp_audit19_te_b > 0 ? 1e-6f : TE_LN_EPS);
        }'
python3 $E engine/models/text_encoder.c '    for (int b = 0; b < B && st == RP_OK; b++)
        st = encode_one(' '    extern int rp_audit19_te_b; /* AUDIT19-14 */
    for (int b = 0; b < B && st == RP_OK; b++)
        if ((rp_audit19_te_b = b), 1) st = encode_one('
python3 $E engine/samplers/samplers.c 'int rp_audit19_gen;' 'int rp_audit19_gen;
int rp_audit19_te_b; /* AUDIT19-14 */'
