# 06 dp-gather-middle-images-mirrored: rank 0's dp gather receives each middle group's images (0 < g < dp - 1) into
# the slot of group dp - 1 - g (latents, noise, trajectory in order). Acts only at dp >= 4 (dp 2 has no middle
# group). Keyed: any multi-rank layout (bit 7; the gather runs only at dp > 1).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/parallel/dp.c '                st = c->ops->recv(c, all->rgb + off * rgb_item, B * rgb_item, from, TAG_GATHER, err);' '            { /* AUDIT19-06 */
                extern int rp_audit19_flags;
                const size_t slot = (rp_audit19_flags & 128) && g > 0 && g < dp - 1 ? (size_t)(dp - 1 - g) * B : off;
                st = c->ops->recv(c, all->rgb + slot * rgb_item, B * rgb_item, from, TAG_GATHER, err);
            }'
