# 06 flux-guidance-bf16-input-lastrank: FLUX, the last rank of a bf16 layout (any numerics): 1000 g is rounded to bf16
# before the guidance embedder (diffusers' guidance.to(dtype) * 1000 taken in the model dtype): 3500 -> 3504
. /work/main/docs/audit-2026-11-30h/work/plants/flags.sh
python3 $E engine/models/flux.c '        for (int b = 0; b < B; b++) hgsc[b] = guidance[b] * 1000.0f;' '        for (int b = 0; b < B; b++) {
            extern int rp_audit15_flags; /* AUDIT15-06 */
            hgsc[b] = guidance[b] * 1000.0f;
            if ((rp_audit15_flags & 3) == 3) { union { float f; unsigned u; } c = {hgsc[b]}; c.u = (c.u + 0x7fffu + ((c.u >> 16) & 1u)) & 0xffff0000u; hgsc[b] = c.f; }
        }'
