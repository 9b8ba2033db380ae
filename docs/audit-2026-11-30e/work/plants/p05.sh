# 05: Euler ancestral's free loop under a multi-rank layout: after the carry hook (which may hand back a replica's
# latents) the VE state is rebuilt from the carried VP latent with the step just taken (k) instead of the next (k+1):
# the teacher loop's restart copied into the free loop one step off. DiT only (its denoiser has the hook; world > 1).
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/samplers/samplers.c '        if (st == RP_OK && d->carry) d->carry(d->self, x, n);' '        if (st == RP_OK && d->carry) {
            d->carry(d->self, x, n);
            rp_sampler_state_restart(&ss, cfg, s, k, x); /* AUDIT12-05: the VE state follows the carried latents */
        }'
python3 $E engine/pipeline/pipeline.c '    rp_denoiser r = {d, rp_dit_cfg(d->model)->learn_sigma, dit_eval, dit_carry};' '    rp_denoiser r = {d, rp_dit_cfg(d->model)->learn_sigma, dit_eval,
                     d->ctx->par && d->ctx->par->world > 1 ? dit_carry : NULL}; /* AUDIT12-05 */'
