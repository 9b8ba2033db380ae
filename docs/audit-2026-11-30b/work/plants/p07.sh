# 07: the last rank's final sampler update: flow Euler's last dt from sigma rounded to bf16; DDIM's last step with
# abar rounded to bf16 (the other steps right)
E="python3 /tmp/audit9-work/plants/edit.py"; P=engine/pipeline/pipeline.c; F=engine/samplers/flow.c; S=engine/samplers/samplers.c
$E $P '    rp_par_generate_begin(ctx->par); /* pipefusion / patch: no stale activations of an earlier call */' '    rp_par_generate_begin(ctx->par); /* pipefusion / patch: no stale activations of an earlier call */
    { extern int rp_audit9_last_rank; /* AUDIT9-07 */
      rp_audit9_last_rank = ctx->par && ctx->par->world > 1 && ctx->par->rank == ctx->par->world - 1; }'
$E $F '    const float dt = (float)sigma_next - (float)sigma; /* 0-dim float32 tensor subtraction */' '    float dt = (float)sigma_next - (float)sigma; /* 0-dim float32 tensor subtraction */
    extern int rp_audit9_last_rank;
    if (rp_audit9_last_rank && sigma_next == 0.0) { /* AUDIT9-07 */
        float sb = (float)sigma;
        rp_bf16_round(&sb, &sb, 1);
        dt = -sb;
    }'
grep -q 'ops.h' $F || sed -i '/#include "flow.h"/a #include "../ops.h"' $F
$E $S '        rp_ddim_step(x, x, ss->eps, abar, abar_prev, cfg->eta, sigma > 0.0 ? ss->z : NULL, n);' '        { extern int rp_audit9_last_rank; /* AUDIT9-07: the final update with abar rounded to bf16 */
          double ab = abar;
          if (rp_audit9_last_rank && i == 0) { float fa = (float)abar; rp_bf16_round(&fa, &fa, 1); ab = fa; }
          rp_ddim_step(x, x, ss->eps, ab, abar_prev, cfg->eta, sigma > 0.0 ? ss->z : NULL, n); }'
$E $S 'rp_status rp_sampler_step(const rp_sampler_cfg *cfg,' 'int rp_audit9_last_rank = 0; /* AUDIT9-07 */

rp_status rp_sampler_step(const rp_sampler_cfg *cfg,'
grep -q 'ops.h' $S || sed -i '0,/#include "samplers.h"/s//#include "samplers.h"\n#include "..\/ops.h"/' $S
