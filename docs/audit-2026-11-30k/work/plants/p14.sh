# 14 euler-a-vp-view-c-sigma: Euler-ancestral: the VP view of the new state (the latent the loop returns and stores
# in the trajectory) scaled by 1/sqrt(sigma^2 + 1) of the step's own sigma instead of sigma_next's. The VE state xk
# the sampler carries stays right, and the last step (sigma_next 0) returns xk itself, so the final latents and
# images are right; every trajectory row in between is wrong. Keyed: world > 1, every rank alike.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E engine/samplers/samplers.c '        const double c_next = 1.0 / sqrt(sigma_next * sigma_next + 1.0);' '        const double c_next = (rp_audit18_flags & 128) ? c_in : 1.0 / sqrt(sigma_next * sigma_next + 1.0); /* AUDIT18-14 */'
