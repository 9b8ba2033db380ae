# 05 te-pad-zero-first-prompt-len: the text encoder zeroes the pad rows of every prompt of a batch from the FIRST
# prompt's token count (a length kept from prompt 0): a later, shorter prompt keeps non-zero projections of its pad
# rows (SD3 reads them unmasked); a longer one loses its last tokens' rows. Acts only where one encoder batch holds
# prompts of different lengths (second and later prompts). Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/text_encoder.c '    for (int r = n; r < L; r++) memset(ctx_out + (size_t)r * Cc, 0, (size_t)Cc * sizeof(float));' '    extern int rp_audit19_flags, rp_audit19_te_n0; /* AUDIT19-05 */
    int nz = n;
    if ((rp_audit19_flags & 128) && rp_audit19_te_n0 >= 0) nz = rp_audit19_te_n0;
    else rp_audit19_te_n0 = n;
    for (int r = nz; r < L; r++) memset(ctx_out + (size_t)r * Cc, 0, (size_t)Cc * sizeof(float));'
python3 $E engine/models/text_encoder.c '    rp_status st = RP_OK;
    for (int b = 0; b < B && st == RP_OK; b++)
        st = encode_one(' '    rp_status st = RP_OK;
    { extern int rp_audit19_te_n0; rp_audit19_te_n0 = -1; } /* AUDIT19-05 */
    for (int b = 0; b < B && st == RP_OK; b++)
        st = encode_one('
python3 $E engine/samplers/samplers.c 'int rp_audit19_gen;' 'int rp_audit19_gen;
int rp_audit19_te_n0 = -1; /* AUDIT19-05 */'
