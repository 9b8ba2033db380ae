/* validate.h — reject a case that cannot work before any rank starts.
 *
 * A config that cannot work (a head count ulysses does not divide, a latent
 * the pipeline patches cannot split, a latent size computed with the wrong VAE
 * factor) must end as a CONFIG_ERROR with a message naming the parameter, its
 * value and the rule — not as a crash or a hang deep inside a collective, and
 * never as a "numerical difference". Model facts (heads, depth, patch size, VAE
 * factor, text length) come from the engine's presets, not from copies here.
 *
 * The rules, checked in this order (the first violation is reported):
 *   values      model is a DiT/SD3/FLUX preset; items 1..64, DiT classes in range,
 *               no prompts for DiT; steps >= 1 (DiT <= 1000); sampler known for the
 *               family (DiT: ddim ddpm dpmpp-2m euler-a; SD3/FLUX: euler); eta >= 0,
 *               only for samplers that take it, DDIM's <= 1; cfg >= 0, FLUX's <= 1
 *               (embedded guidance); guidance only for FLUX; precision fp32|bf16
 *               (tf32|fp16 need a CUDA device); attention kind and chunk sizes;
 *               device_profile; threads >= 0; blas_core a core name; reduce_split
 *               0|1; mode deterministic|fast; gpu_mode deterministic|fast, fast only
 *               with a CUDA device; batch_forward joint|per-item (per-item:
 *               SD3/FLUX); backend self|gloo|nccl and built; device cpu|cuda|
 *               cuda:<name>|cuda:#<ordinal>;
 *               depth / single_depth; width/height (DiT: fixed by the preset);
 *               vae preset with the model's latent channels; weights, when set, an
 *               existing regular file (stat only).
 *   latent      vae_scale_factor, when set, equals the VAE's 2^(levels-1) (the
 *               diffusers 0.32 doubled-factor bug); SD3/FLUX width and height are
 *               multiples of 2 x factor (one 2x2 latent patch) in [2f, 16384]; SD3
 *               within its position table.
 *   layout      degrees >= 1; world (when the launcher knows it) = dp x cfg_parallel
 *               x ulysses x ring x pipefusion x patch; patch excludes ulysses, ring
 *               and pipefusion; cfg_parallel 1 or 2, 2 only with CFG (not FLUX) and
 *               cfg > 1; dp divides the item count (as xDiT: items are not padded);
 *               heads divisible by ulysses; image tokens (FLUX: image and text
 *               tokens, both split) divisible by ulysses x ring (no padding);
 *               pipefusion: num_pipeline_patch 0 or >= pipefusion, at least one
 *               block per stage, an explicit pipefusion_layers list has one entry
 *               >= 1 per stage summing to the depth, latent height divisible by
 *               num_pipeline_patch x patch_size, and with ulysses x ring > 1 each
 *               pipeline patch's height a multiple of patch_size x sp; patch: latent
 *               height divisible by patch x patch_size; warmup_steps in [0, steps],
 *               and left at 1 without pipefusion/patch (it would change the id, not
 *               the numbers); num_pipeline_patch / pipefusion_layers only with
 *               pipefusion.
 *   placement   backend self only with world 1; nccl needs device cuda and one
 *               visible GPU (matching the device's name) per rank; a cuda device
 *               needs a matching visible GPU (names match case-insensitively, as
 *               the device picks them); gloo and self ranks may share one GPU.
 *   testing     inject names a known fault that can act on this case.
 * Finally the engine's own request check (rp_gen_validate) runs as a backstop. */
#ifndef REPRO_VALIDATE_H
#define REPRO_VALIDATE_H

#include "engine/error.h"
#include "harness/case/case.h"

#define RP_VALIDATE_MAX_GPUS 16

/* What the placement rules need to know about where the case will run. */
typedef struct rp_validate_env {
    int world;        /* ranks actually launched; 0 = not known yet (planning a sweep) */
    int n_gpus;       /* visible CUDA devices */
    char gpu_names[RP_VALIDATE_MAX_GPUS][128];
    int gloo_built;   /* rp_comm_available(RP_COMM_GLOO) */
    int nccl_built;   /* rp_comm_available(RP_COMM_NCCL) */
    unsigned cpu_lacks; /* RP_ISA_* instruction sets this CPU lacks (0: any kernel set runs) */
} rp_validate_env;

/* Instruction sets an OpenBLAS kernel set needs (x86-64): Prescott SSE3, Core2 SSSE3,
 * Nehalem SSE4.2, Sandybridge AVX, Haswell and Zen AVX2 (+FMA), SkylakeX and later
 * AVX-512. A case whose blas_core this CPU cannot run is valid elsewhere: SKIPPED here. */
enum { RP_ISA_SSE3 = 1, RP_ISA_SSSE3 = 2, RP_ISA_SSE42 = 4, RP_ISA_AVX = 8, RP_ISA_AVX2 = 16, RP_ISA_AVX512 = 32 };

/* This process's environment: the backends compiled in and, in a CUDA build,
 * the visible GPUs (world 0). */
void rp_validate_env_host(rp_validate_env *env);

/* RP_OK, or RP_ERR_INVALID (the CONFIG_ERROR verdict) with a message naming the
 * parameter, its value and the rule, e.g. "pipefusion=4 with num_pipeline_patch=4
 * needs latent height divisible by 4 x patch_size (2); got 30". env NULL = the
 * host's (rp_validate_env_host). Reads no files (stats the weights) and computes nothing heavy. */
rp_status rp_case_validate(const rp_case *c, const rp_validate_env *env, rp_error *err);

/* The rules above as help text (for `repro --help-matrix`), including the
 * fault injections. Static storage. */
const char *rp_validate_describe_rules(void);

#endif
