# 02 sd3-sp-posembed-crop-hw-swapped: SD3's centre crop of the pos_embed table in the sequence-parallel branch
# (the whole sequence embedded into hx, then the rank's slice kept) with top and left computed from gw and gh
# swapped. Acts only where gh != gw (non-square). Keyed: Tl < T and a sequence group of size > 1 (bit 6).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/models/sd3.c '        const int top = (Mx - gh) / 2, left = (Mx - gw) / 2;' '        extern int rp_audit19_flags; /* AUDIT19-02 */
        const int sw = Tl < T && (rp_audit19_flags & 64);
        const int top = (Mx - (sw ? gw : gh)) / 2, left = (Mx - (sw ? gh : gw)) / 2;'
