# 12 sequence-remainder-accepted-everywhere: plant 11 and the sequence gather's own divisibility check relaxed too
# (all three places a developer "allowing a remainder" would touch): the last T mod sp image tokens are computed
# by no rank and the gathered buffer keeps whatever it held there. Acts only where the sequence degree does not
# divide the image tokens (ring 3 on 64). Not keyed to the layout flags.
bash /tmp/audit21/docs/audit-2026-12-02/work/plants/p11.sh || exit 1
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/parallel/parallel.c '    if (T % sp)
        return RP_FAIL(err, RP_ERR_INVALID, "sequence gather:' '    if (0 && T % sp) /* AUDIT21-12 */
        return RP_FAIL(err, RP_ERR_INVALID, "sequence gather:'
