# 02 ulysses-rep-owngroup-bf16-default: Ulysses, the last rank of a bf16 layout under default numerics: the
# allgathered replicated (SD3 text) rows of every head group are taken from this rank's own head group
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/parallel/sp_attention.c '                    memcpy(out + (((size_t)b * H + pr * Hu + h) * T + Ts) * D,
                           all + (((size_t)pr * B + b) * Hu + h) * Trep * D, sizeof(float) * Trep * D);' '                {
                    extern int rp_audit15_flags; /* AUDIT15-02 */
                    const int g = (rp_audit15_flags & 17) == 17 ? me : pr;
                    memcpy(out + (((size_t)b * H + pr * Hu + h) * T + Ts) * D,
                           all + (((size_t)g * B + b) * Hu + h) * Trep * D, sizeof(float) * Trep * D);
                }'
