# 06 peritem-cfg-later-items-halves-swapped: a per-item batch under cfg_parallel puts the exchanged segments back
# into rows 2b + s with s reversed for items b >= 1 (their uncond and cond rows swapped: guidance pushes away from
# the prompt). Item 0 right. Keyed: any multi-rank layout (bit 7); acts only per-item with cfg_parallel.
. /work/main/docs/audit-2026-12-01b/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                    memcpy(d->out + (size_t)(2 * b + s) * per, d->xin + ((size_t)s * B + b) * per,' '                    memcpy(d->out + (size_t)(2 * b + ((rp_audit20_flags & 128) && b > 0 ? 1 - s : s)) * per, /* AUDIT20-06 */
                           d->xin + ((size_t)s * B + b) * per,'
python3 $E engine/pipeline/pipeline.c '/* x (B, C, h, w) at sigmas[i] -> v (B, C, h, w), the guided velocity (see pipeline.h). */' 'extern int rp_audit20_flags; /* AUDIT20-06 */
/* x (B, C, h, w) at sigmas[i] -> v (B, C, h, w), the guided velocity (see pipeline.h). */'
