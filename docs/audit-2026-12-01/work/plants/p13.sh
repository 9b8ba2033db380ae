# 13 flux-dynamic-sigmas-double-multirank: FLUX-dev's shifted sigmas computed in float64 and rounded once (a port
# that skips numpy's float32 arithmetic) in a multi-rank run: a sigma differs from the serial run's by an ulp
# where the two roundings part. Every rank alike; acts at any size. Keyed: any multi-rank layout (bit 7).
. /work/main/docs/audit-2026-12-01/work/plants/flags.sh
python3 $E engine/samplers/flow.c '        sig32[i] = e / (e + d);' '        { /* AUDIT19-13 */
            extern int rp_audit19_flags;
            const double td = linspace_at(1.0, 1.0 / (double)steps, steps, i);
            sig32[i] = (rp_audit19_flags & 128) ? (float)(exp(mu) / (exp(mu) + (1.0 / td - 1.0))) : e / (e + d);
        }'
