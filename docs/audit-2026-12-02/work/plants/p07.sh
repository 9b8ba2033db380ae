# 07 dpmpp-2m-history-kept-across-calls: DPM-Solver++(2M)'s previous data prediction is kept in a module buffer
# (to let a chunked run continue) and never invalidated at a new call: the next rp_generate call's step 0 takes the
# previous call's last x0 as its history (second order at step 0). Every rank, world 1 too. The case's own run is
# its launch's first call (right); every later run of the launch (teacher, shadows, leak check) starts wrong.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '        rp_dpmpp_2m_step(x, x, ss->x0, ss->have_last ? ss->x0_last : NULL, ss->abar_last, abar, abar_prev, n);
        float *tmp = ss->x0_last;' '        { /* AUDIT21-07: the history kept across calls */
            static float *keep; static size_t keep_n; static double keep_abar;
            if (k == 0 && !ss->have_last && keep && keep_n == n) {
                memcpy(ss->x0_last, keep, n * sizeof(float)); ss->abar_last = keep_abar; ss->have_last = 1;
            }
            rp_dpmpp_2m_step(x, x, ss->x0, ss->have_last ? ss->x0_last : NULL, ss->abar_last, abar, abar_prev, n);
            if (keep_n != n) { free(keep); keep = malloc(n * sizeof(float)); keep_n = keep ? n : 0; }
            if (keep) { memcpy(keep, ss->x0, n * sizeof(float)); keep_abar = abar; }
        }
        float *tmp = ss->x0_last;'
