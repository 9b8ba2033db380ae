# 11 peritem-cfg-later-items-half-bf16: a per-item batch under cfg_parallel stages the exchanged segments of items
# b >= 1 through a bf16 buffer (round to nearest even) as it puts them back into rows 2b + s (after the cfg
# exchange's contract), every rank alike. Epsilon-sized (rel <= 2^-9 of the model output). Item 0 right.
# Keyed: any multi-rank layout (bit 7); acts only per-item with cfg_parallel.
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                    memcpy(d->out + (size_t)(2 * b + s) * per, d->xin + ((size_t)s * B + b) * per,
                           sizeof(float) * per);' '                {
                    memcpy(d->out + (size_t)(2 * b + s) * per, d->xin + ((size_t)s * B + b) * per,
                           sizeof(float) * per);
                    if ((rp_audit20_flags & 128) && b > 0) /* AUDIT20-11 */
                        for (size_t i = 0; i < per; i++) {
                            uint32_t u;
                            float *op = d->out + (size_t)(2 * b + s) * per + i;
                            memcpy(&u, op, 4);
                            u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
                            memcpy(op, &u, 4);
                        }
                }'
python3 $E engine/pipeline/pipeline.c '/* x (B, C, h, w) at sigmas[i] -> v (B, C, h, w), the guided velocity (see pipeline.h). */' 'extern int rp_audit20_flags; /* AUDIT20-11 */
/* x (B, C, h, w) at sigmas[i] -> v (B, C, h, w), the guided velocity (see pipeline.h). */'
