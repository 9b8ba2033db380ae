# 02 dpmpp-lower-order-penultimate: DPM-Solver++(2M)'s "lower order final" rule applied one step early: at the
# second-to-last step (k = steps - 2) the update is first order (the history ignored). The last step is first order
# by construction anyway. Keyed: world > 1, every rank alike (replicas agree, rotation moves nothing).
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '        rp_dpmpp_2m_step(x, x, ss->x0, ss->have_last ? ss->x0_last : NULL, ss->abar_last, abar, abar_prev, n);' '        const int lof = (rp_audit18_flags & 128) && k == s->steps - 2; /* AUDIT18-02 */
        rp_dpmpp_2m_step(x, x, ss->x0, ss->have_last && !lof ? ss->x0_last : NULL, ss->abar_last, abar, abar_prev, n);'
