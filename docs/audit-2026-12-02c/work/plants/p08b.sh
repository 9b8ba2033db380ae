# 08b teacher-row-off-by-one: teacher forcing starts step k >= 2 from the reference's row k - 1 (row 0 and step 1
# right): the input pointer computed one row back. Every layout, world 1 too (DiT and flow loops).
E=/work/audit23-out/work/edit.py
python3 $E engine/pipeline/pipeline.c '        memcpy(x, teacher + (size_t)k * n, n * sizeof(float));
        rp_sampler_state_restart(&ss, cfg, s, k, x);' '        const float *xin = teacher + (size_t)(k >= 2 ? k - 1 : k) * n; /* AUDIT23-08b */
        memcpy(x, xin, n * sizeof(float));
        rp_sampler_state_restart(&ss, cfg, s, k, x);'
python3 $E engine/pipeline/pipeline.c '        const rp_sampler_own_step own = {.cfg = cfg, .s = s, .k = k, .n = n, .x = teacher + (size_t)k * n,' '        const rp_sampler_own_step own = {.cfg = cfg, .s = s, .k = k, .n = n, .x = xin,'
python3 $E engine/pipeline/pipeline.c '        memcpy(x, teacher + (size_t)i * n, n * sizeof(float));
        st = d->eval(d->self, x, i, s->sigmas[i], s->timesteps[i], v, err);' '        memcpy(x, teacher + (size_t)(i >= 2 ? i - 1 : i) * n, n * sizeof(float)); /* AUDIT23-08b */
        st = d->eval(d->self, x, i, s->sigmas[i], s->timesteps[i], v, err);'
