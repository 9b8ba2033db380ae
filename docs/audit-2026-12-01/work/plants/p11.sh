# 11 dp-gather-middle-latents-mirrored: 06's mirror on the final latents instead of the images: rank 0's dp gather
# receives each middle group's final latents (0 < g < dp - 1) into the slot of group dp - 1 - g; noise,
# trajectory and images in order. Acts only at dp >= 4. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/parallel/dp.c '            if (st == RP_OK) st = c->ops->recv(c, all->latents + off * per, sizeof(float) * B * per, from, TAG_GATHER, err);' '            if (st == RP_OK) { /* AUDIT19-11 */
                extern int rp_audit19_flags;
                const size_t slot = (rp_audit19_flags & 128) && g > 0 && g < dp - 1 ? (size_t)(dp - 1 - g) * B : off;
                st = c->ops->recv(c, all->latents + slot * per, sizeof(float) * B * per, from, TAG_GATHER, err);
            }'
