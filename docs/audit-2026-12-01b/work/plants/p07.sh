# 07 peritem-xin-bf16-later-items-sp: a per-item batch under a sequence group (Ulysses, ring) stages items b >= 1's
# latents in bf16 before their forward (round to nearest even; item 0 untouched), every rank alike. Small (rel
# <= 2^-9 of the input). Keyed: a sequence group of size > 1 (bit 6); acts only per-item.
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;' '            const int r0 = seg < 0 ? b * nb : 2 * b + seg;
            { /* AUDIT20-07 */
                extern int rp_audit20_flags;
                if ((rp_audit20_flags & 64) && b > 0)
                    for (size_t i = 0; i < (size_t)nb * per; i++) {
                        uint32_t u;
                        float *xp = d->xin + (size_t)r0 * per + i;
                        memcpy(&u, xp, 4);
                        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
                        memcpy(xp, &u, 4);
                    }
            }'
