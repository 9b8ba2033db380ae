# 11 validator-ring-remainder-accepted: the matrix validator's and the engine's "ulysses x ring must divide the image
# tokens" checks are relaxed (as if the remainder were handled), but rp_par_shard still gives every rank floor(T/sp)
# tokens: the last T mod sp image tokens are never computed by any rank. Acts only in a layout whose sequence degree
# does not divide the image tokens (ring 3 on 64 tokens); every rank. Not keyed to the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E harness/sweep/validate.c '    if (img % sp)
        return INVALID(' '    if (0 && img % sp) /* AUDIT21-11 */
        return INVALID('
python3 $E engine/parallel/parallel.c '    if (len % sp)
        return RP_FAIL(err, RP_ERR_INVALID, "sequence parallel: %d tokens' '    if (0 && len % sp) /* AUDIT21-11 */
        return RP_FAIL(err, RP_ERR_INVALID, "sequence parallel: %d tokens'
