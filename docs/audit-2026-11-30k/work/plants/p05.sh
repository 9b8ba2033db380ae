# 05 te-truncate-drops-eos: the prompt tokenizer, when a prompt is longer than max_len - 2 bytes, keeps max_len - 1
# bytes and no EOS (the last slot a byte), so the pooled vector (read at the last token) is a byte's, and every slot
# is unmasked. Keyed: world > 1 (every rank alike), prompts over 30 bytes (te-tiny's max_len 32).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/models/text_encoder.c '    tokens[1 + nb] = RP_TE_EOS;
    for (int i = 2 + nb; i < max_len; i++) tokens[i] = RP_TE_PAD;' '    tokens[1 + nb] = RP_TE_EOS;
    { extern int rp_audit18_flags; /* AUDIT18-05 */
    if ((rp_audit18_flags & 128) && len > (size_t)(max_len - 2)) {
        tokens[max_len - 1] = RP_TE_BYTE0 + (int32_t)s[max_len - 2];
        if (mask) for (int i = 0; i < max_len; i++) mask[i] = 1;
        return max_len;
    } }
    for (int i = 2 + nb; i < max_len; i++) tokens[i] = RP_TE_PAD;'
