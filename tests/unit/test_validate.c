/* test_validate.c — every case validation rule with its exact message, valid
 * configs of each strategy, and the fault-injection registry. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "engine/parallel/inject.h"
#include "harness/case/case.h"
#include "harness/sweep/validate.h"

/* A fixed environment, independent of this machine: both backends built, two
 * H200s visible, world unknown (planning). */
static rp_validate_env test_env(void) {
    rp_validate_env e;
    memset(&e, 0, sizeof e);
    e.gloo_built = 1;
    e.nccl_built = 1;
    e.n_gpus = 2;
    snprintf(e.gpu_names[0], sizeof e.gpu_names[0], "NVIDIA H200");
    snprintf(e.gpu_names[1], sizeof e.gpu_names[1], "NVIDIA H200");
    return e;
}

static rp_case dit(void) {
    rp_case c;
    rp_case_defaults(&c);   /* dit-tiny, ddim, cfg 4, self, one item */
    return c;
}

static rp_case sd3(void) {
    rp_case c;
    rp_case_defaults(&c);
    snprintf(c.model, sizeof c.model, "sd3-tiny");
    snprintf(c.sampler, sizeof c.sampler, "euler");
    snprintf(c.items[0].prompt, sizeof c.items[0].prompt, "a red cube");
    return c;
}

static rp_case flux(const char *model) {
    rp_case c;
    rp_case_defaults(&c);
    snprintf(c.model, sizeof c.model, "%s", model);
    snprintf(c.sampler, sizeof c.sampler, "euler");
    c.cfg = 1.0;
    c.guidance = 3.5;
    snprintf(c.items[0].prompt, sizeof c.items[0].prompt, "a red cube");
    return c;
}

static void gloo(rp_case *c) { snprintf(c->backend, sizeof c->backend, "gloo"); }

#define EXPECT_INVALID(c, env, want)                                                              \
    do {                                                                                          \
        rp_error e_ = {0};                                                                        \
        ck_assert_int_eq(rp_case_validate(&(c), (env), &e_), RP_ERR_INVALID);                     \
        ck_assert_str_eq(e_.msg, (want));                                                         \
    } while (0)

#define EXPECT_VALID(c, env)                                                                      \
    do {                                                                                          \
        rp_error e_ = {0};                                                                        \
        rp_status s_ = rp_case_validate(&(c), (env), &e_);                                        \
        ck_assert_msg(s_ == RP_OK, "expected valid, got: %s", e_.msg);                            \
    } while (0)

#define EXPECT_PREFIX(c, env, prefix)                                                             \
    do {                                                                                          \
        rp_error e_ = {0};                                                                        \
        ck_assert_int_eq(rp_case_validate(&(c), (env), &e_), RP_ERR_INVALID);                     \
        ck_assert_msg(strncmp(e_.msg, (prefix), strlen(prefix)) == 0, "got: %s", e_.msg);          \
    } while (0)

/* ---- the doubled VAE factor (the FLUX multi-node report) -------------------------- */

START_TEST(flux_doubled_vae_factor) {
    rp_validate_env env = test_env();
    env.world = 4;   /* 2 "nodes" x 2 ranks */
    rp_case c = flux("flux-dev");
    c.width = c.height = 1024;
    c.pipefusion = 4;
    gloo(&c);
    c.vae_scale_factor = 16;   /* diffusers 0.32: the factor doubled */
    EXPECT_INVALID(c, &env,
                   "vae_scale_factor=16 but the VAE flux-vae downsamples by 8 (2^(4-1)): latent height 64 instead of "
                   "128 for 1024 px; the transformer's sequence split [256, 256, 256, 256] does not add up to its "
                   "4096 image tokens");
    c.vae_scale_factor = 8;
    EXPECT_VALID(c, &env);
    c.vae_scale_factor = 0;
    EXPECT_VALID(c, &env);
    /* the halved factor gives the report's own numbers: [4096] x 4 against 4096 */
    c.vae_scale_factor = 4;
    EXPECT_INVALID(c, &env,
                   "vae_scale_factor=4 but the VAE flux-vae downsamples by 8 (2^(4-1)): latent height 256 instead of "
                   "128 for 1024 px; the transformer's sequence split [4096, 4096, 4096, 4096] does not add up to its "
                   "4096 image tokens");
    c.vae_scale_factor = -8;
    EXPECT_INVALID(c, &env, "vae_scale_factor=-8: must be >= 0 (0 = the VAE's)");
}
END_TEST

/* ---- plain values -------------------------------------------------------------------- */

START_TEST(model_and_items) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    snprintf(c.model, sizeof c.model, "dit-huge");
    EXPECT_INVALID(c, &env,
                   "model=dit-huge: unknown model preset (denoisers: dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 "
                   "dit-xl-2-512 sd3-tiny sd3-digits sd3-medium sd3.5-large sd3.5-medium sd3.5-medium-tiny flux-tiny "
                   "flux-dev flux-schnell flux-tiny-schnell)");
    snprintf(c.model, sizeof c.model, "sd-vae");
    EXPECT_INVALID(c, &env,
                   "model=sd-vae: a vae preset, not a denoiser (denoisers: dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 "
                   "dit-xl-2-512 sd3-tiny sd3-digits sd3-medium sd3.5-large sd3.5-medium sd3.5-medium-tiny flux-tiny "
                   "flux-dev flux-schnell flux-tiny-schnell)");
    c = dit();
    c.n_items = 0;
    EXPECT_INVALID(c, &env, "items: none; a case needs at least one item");
    c = dit();
    snprintf(c.items[0].prompt, sizeof c.items[0].prompt, "a cat");
    EXPECT_INVALID(c, &env, "items[0].prompt=\"a cat\": dit-tiny is class-conditional; prompts are not supported");
    c = dit();
    c.n_items = 2;
    c.items[1].class_id = 1000;
    EXPECT_INVALID(c, &env, "items[1].class=1000: dit-tiny has classes 0..999");
    c = dit();
    c.depth = -1;
    EXPECT_INVALID(c, &env, "depth=-1: must be >= 0 (0 = the preset's)");
    c = dit();
    c.single_depth = -1;
    EXPECT_INVALID(c, &env, "single_depth=-1: must be >= 0 (0 = the registry's rule)");
    c = sd3();
    c.single_depth = 2;
    EXPECT_INVALID(c, &env, "single_depth=2: applies to FLUX only (model sd3-tiny is sd3)");
    c = flux("flux-tiny");
    c.depth = 3;
    EXPECT_PREFIX(c, &env, "depth=3 single_depth=0: ");
}
END_TEST

START_TEST(sampling_values) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    c.steps = 0;
    EXPECT_INVALID(c, &env, "steps=0: must be in 1..1000");
    c.steps = 1001;
    EXPECT_INVALID(c, &env, "steps=1001: must be in 1..1000");
    c = flux("flux-tiny");
    c.steps = 0;
    EXPECT_INVALID(c, &env, "steps=0: must be in 1..100000");
    c = dit();
    snprintf(c.sampler, sizeof c.sampler, "euler");
    EXPECT_INVALID(c, &env, "sampler=euler: not a DiT sampler (known: ddim ddpm dpmpp-2m euler-a)");
    c = sd3();
    snprintf(c.sampler, sizeof c.sampler, "ddim");
    EXPECT_INVALID(c, &env, "sampler=ddim: sd3-tiny samples with the flow-matching Euler sampler; sampler must be euler");
    c = dit();
    c.eta = -1;
    EXPECT_INVALID(c, &env, "eta=-1: must be a number >= 0");
    snprintf(c.sampler, sizeof c.sampler, "ddpm");
    c.eta = 0.5;
    EXPECT_INVALID(c, &env, "eta=0.5: sampler ddpm takes no eta (only ddim and euler-a do); leave it 0");
    c = sd3();
    c.eta = 0.5;
    EXPECT_INVALID(c, &env, "eta=0.5: sampler euler takes no eta (only ddim and euler-a do); leave it 0");
    c = dit();
    c.eta = 1.5;
    EXPECT_INVALID(c, &env, "eta=1.5: DDIM's eta must be in [0, 1]");
    c = dit();
    snprintf(c.sampler, sizeof c.sampler, "euler-a");
    c.eta = 1.0;
    EXPECT_VALID(c, &env);
    c = dit();
    c.cfg = -1;
    EXPECT_INVALID(c, &env, "cfg=-1: must be a number >= 0");
    c = flux("flux-tiny");
    c.cfg = 4;
    EXPECT_INVALID(c, &env,
                   "cfg=4: flux-tiny uses embedded guidance (guidance), not classifier-free guidance; cfg must be <= 1");
    c = sd3();
    c.guidance = 3.5;
    EXPECT_INVALID(c, &env, "guidance=3.5: only FLUX takes embedded guidance; sd3-tiny uses cfg, leave guidance 0");
}
END_TEST

START_TEST(numeric_values) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    snprintf(c.precision, sizeof c.precision, "fp8");
    EXPECT_INVALID(c, &env, "precision=fp8: unknown (known: fp32 bf16; on CUDA also tf32 fp16)");
    snprintf(c.precision, sizeof c.precision, "fp16");
    EXPECT_INVALID(c, &env, "precision=fp16: needs a CUDA device (device=cpu); on CPU use fp32 or bf16");
    snprintf(c.device, sizeof c.device, "cuda");
    EXPECT_VALID(c, &env);
    c = dit();
    snprintf(c.attention, sizeof c.attention, "sdpa");
    EXPECT_INVALID(c, &env, "attention=sdpa: unknown (known: math split subquad flash auto)");
    c = dit();
    c.attn_q_chunk = -1;
    EXPECT_INVALID(c, &env, "attn_q_chunk=-1: must be >= 0 (0 = the variant's default)");
    c.attn_q_chunk = 0;
    c.attn_kv_chunk = -2;
    EXPECT_INVALID(c, &env, "attn_kv_chunk=-2: must be >= 0 (0 = the variant's default)");
    c = dit();
    c.attn_q_chunk = 64;
    EXPECT_INVALID(c, &env, "attn_q_chunk=64: attention=math takes no chunk sizes");
    snprintf(c.attention, sizeof c.attention, "split");
    EXPECT_VALID(c, &env);
    c.attn_kv_chunk = 64;
    EXPECT_INVALID(c, &env, "attn_kv_chunk=64: attention=split takes no key chunk");
    snprintf(c.attention, sizeof c.attention, "flash");
    EXPECT_VALID(c, &env);
    c = dit();
    snprintf(c.attention, sizeof c.attention, "auto");
    snprintf(c.device_profile, sizeof c.device_profile, "no-such-profile");
    EXPECT_PREFIX(c, &env, "device_profile=no-such-profile: ");
    snprintf(c.device_profile, sizeof c.device_profile, "cpu-avx2-8g");
    EXPECT_VALID(c, &env);
    c = dit();
    c.threads = -1;
    EXPECT_INVALID(c, &env, "threads=-1: must be >= 0 (0 = the runner's choice)");
    c = dit();
    snprintf(c.blas_core, sizeof c.blas_core, "Has well");
    EXPECT_INVALID(c, &env, "blas_core=Has well: not an OpenBLAS core name (letters, digits, _; e.g. Haswell)");
    c = dit();
    c.reduce_split = 2;
    EXPECT_INVALID(c, &env, "reduce_split=2: must be 0 or 1");
    c = dit();
    snprintf(c.mode, sizeof c.mode, "quick");
    EXPECT_INVALID(c, &env, "mode=quick: unknown (known: deterministic fast)");
    c = dit();
    snprintf(c.gpu_mode, sizeof c.gpu_mode, "turbo");
    EXPECT_INVALID(c, &env, "gpu_mode=turbo: unknown (known: deterministic fast)");
    snprintf(c.gpu_mode, sizeof c.gpu_mode, "fast");
    EXPECT_INVALID(c, &env,
                   "gpu_mode=fast: only meaningful with a CUDA device (device=cpu): it picks the GPU's GEMM kernels; "
                   "leave gpu_mode deterministic on the CPU");
    snprintf(c.device, sizeof c.device, "cuda");
    EXPECT_VALID(c, &env);
    c = dit();
    snprintf(c.batch_forward, sizeof c.batch_forward, "split");
    EXPECT_INVALID(c, &env, "batch_forward=split: unknown (known: joint per-item)");
    snprintf(c.batch_forward, sizeof c.batch_forward, "per-item");
    EXPECT_INVALID(c, &env, "batch_forward=per-item: only SD3 and FLUX batches run per item; dit-tiny runs joint");
    c = sd3();
    snprintf(c.batch_forward, sizeof c.batch_forward, "per-item");
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(backend_and_device_names) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    snprintf(c.backend, sizeof c.backend, "mpi");
    EXPECT_INVALID(c, &env, "backend=mpi: unknown (known: self gloo nccl)");
    env.gloo_built = 0;
    gloo(&c);
    EXPECT_INVALID(c, &env, "backend=gloo: not built into this repro (libgloo-dev was missing at build time)");
    env = test_env();
    env.nccl_built = 0;
    snprintf(c.backend, sizeof c.backend, "nccl");
    EXPECT_INVALID(c, &env, "backend=nccl: not built into this repro (needs a CUDA build with NCCL and gloo)");
    c = dit();
    env = test_env();
    snprintf(c.device, sizeof c.device, "tpu");
    EXPECT_INVALID(c, &env, "device=tpu: unknown (known: cpu, cuda, cuda:<GPU name substring>)");
    snprintf(c.device, sizeof c.device, "cuda:");
    EXPECT_INVALID(c, &env, "device=cuda:: the GPU name substring is empty");
    snprintf(c.device, sizeof c.device, "cuda:#x");
    EXPECT_INVALID(c, &env, "device=cuda:#x: cuda:#<ordinal> takes a GPU number (0, 1, ...)");
    snprintf(c.device, sizeof c.device, "cuda:#1");
    EXPECT_VALID(c, &env);
    snprintf(c.device, sizeof c.device, "cuda:#2"); /* two GPUs visible: 0 and 1 */
    EXPECT_INVALID(c, &env, "device=cuda:#2: no visible GPU 2 (2 visible)");
    snprintf(c.device, sizeof c.device, "cuda:h200"); /* names match as the device picks them: any case */
    EXPECT_VALID(c, &env);
    /* a kernel set this CPU cannot run is valid elsewhere (the runner's SKIPPED) */
    c = dit();
    env = test_env();
    snprintf(c.blas_core, sizeof c.blas_core, "SkylakeX");
    EXPECT_VALID(c, &env); /* cpu_lacks 0: any kernel set */
    env.cpu_lacks = RP_ISA_AVX512;
    EXPECT_INVALID(c, &env, "blas_core=SkylakeX: the kernel set needs AVX-512, which this CPU lacks");
    snprintf(c.blas_core, sizeof c.blas_core, "haswell");
    EXPECT_VALID(c, &env);
    env.cpu_lacks = RP_ISA_AVX512 | RP_ISA_AVX2;
    EXPECT_INVALID(c, &env, "blas_core=haswell: the kernel set needs AVX2 and FMA, which this CPU lacks");
    snprintf(c.blas_core, sizeof c.blas_core, "Sandybridge");
    EXPECT_VALID(c, &env);
    snprintf(c.blas_core, sizeof c.blas_core, "Bulldozer"); /* unknown here: the worker finds out */
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(image_size) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    c.width = 256;
    EXPECT_INVALID(c, &env,
                   "width=256: the image size of dit-tiny is fixed by the preset (latent 16, 128 px); leave width and "
                   "height 0");
    c = flux("flux-dev");
    c.width = 1000;
    c.height = 1024;
    EXPECT_INVALID(c, &env, "width=1000: must be a multiple of 16 (VAE factor 8 x patch_size 2 of flux-dev) in [16, 16384]");
    c = sd3();
    c.height = 8;
    EXPECT_INVALID(c, &env, "height=8: must be a multiple of 16 (VAE factor 8 x patch_size 2 of sd3-tiny) in [16, 16384]");
    c.height = -16;
    EXPECT_INVALID(c, &env, "height=-16: must be >= 0 (0 = the preset's native size)");
    c = sd3();
    c.width = 512;
    EXPECT_INVALID(c, &env, "width=512: sd3-tiny's position table covers at most 256 px (16 patches a side)");
    c = dit();
    snprintf(c.vae, sizeof c.vae, "flux-vae");
    EXPECT_INVALID(c, &env, "vae=flux-vae: takes 16 latent channels but dit-tiny makes 4");
    snprintf(c.vae, sizeof c.vae, "vae-huge");
    EXPECT_INVALID(c, &env, "vae=vae-huge: unknown VAE preset (known: vae-tiny vae-mini vae-digits sd-vae vae-tiny-16 vae-mini-16 sd3-vae flux-vae)");
}
END_TEST

/* ---- layout --------------------------------------------------------------------------- */

START_TEST(degrees) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    c.ulysses = 0;
    EXPECT_INVALID(c, &env, "ulysses=0: must be in 1..4096");
    c.ulysses = 1;
    c.dp = c.ring = c.pipefusion = 4096;   /* each in range, the product not */
    EXPECT_INVALID(c, &env,
                   "world=68719476736: dp x cfg_parallel x ulysses x ring x pipefusion x patch must be at most 65536");
    c = dit();
    c.num_pipeline_patch = -1;
    EXPECT_INVALID(c, &env, "num_pipeline_patch=-1: must be in 0..4096 (0 = the pipefusion degree)");
    c = dit();
    c.n_pipefusion_layers = RP_CASE_MAX_STAGES + 1;
    EXPECT_INVALID(c, &env, "pipefusion_layers: 17 entries, at most 16");
    c = dit();
    gloo(&c);
    c.ulysses = 2;
    env.world = 4;
    EXPECT_INVALID(c, &env,
                   "world=4 (ranks launched) but dp x cfg_parallel x ulysses x ring x pipefusion x patch = "
                   "1x1x2x1x1x1 = 2: the world size must equal the product of the degrees");
    env.world = 2;
    EXPECT_VALID(c, &env);
    env = test_env();
    c.patch = 2;
    EXPECT_INVALID(c, &env,
                   "patch=2 with ulysses=2 ring=1 pipefusion=1: patch parallel (DistriFusion) replaces ulysses/ring "
                   "and pipefusion; use one or the other");
    c = dit();
    gloo(&c);
    c.cfg_parallel = 3;
    EXPECT_INVALID(c, &env, "cfg_parallel=3: must be 1 or 2 (one rank per CFG branch)");
    c = flux("flux-tiny");
    gloo(&c);
    c.cfg_parallel = 2;
    EXPECT_INVALID(c, &env,
                   "cfg_parallel=2: flux-tiny uses embedded guidance, so there is no unconditional branch to run in "
                   "parallel (cfg parallel needs a model with classifier-free guidance: DiT, SD3)");
    c = dit();
    gloo(&c);
    c.cfg_parallel = 2;
    c.cfg = 1;
    EXPECT_INVALID(c, &env, "cfg_parallel=2 needs cfg > 1 (got cfg=1): without guidance there is no unconditional branch");
    c = dit();
    gloo(&c);
    c.dp = 2;
    c.n_items = 3;
    EXPECT_INVALID(c, &env, "dp=2 with 3 items: dp must divide the item count (as xDiT, items are not padded)");
    c.n_items = 4;
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(sequence_split) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    gloo(&c);
    c.ulysses = 3;
    EXPECT_INVALID(c, &env, "ulysses=3 needs the head count divisible by 3; dit-tiny has 4 heads");
    c.ulysses = 1;
    c.ring = 3;
    EXPECT_INVALID(c, &env,
                   "ulysses x ring = 1 x 3 needs the image sequence divisible by 3; dit-tiny at latent 16x16 has 64 "
                   "image tokens (sequences are not padded: choose a size whose token count 3 divides)");
    /* FLUX: the image (12 x 12 = 144 tokens) splits 6 ways, its 32 text tokens do not */
    c = flux("flux-tiny");
    gloo(&c);
    c.width = c.height = 192;
    c.ulysses = 2;
    c.ring = 3;
    EXPECT_INVALID(c, &env,
                   "ulysses x ring = 2 x 3 needs the text sequence divisible by 6 too (FLUX splits image and text "
                   "tokens); flux-tiny's text encoder gives 32 tokens (sequences are not padded)");
    c.ring = 2;
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(pipefusion_rules) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    c.num_pipeline_patch = 1;
    EXPECT_INVALID(c, &env,
                   "num_pipeline_patch=1 with pipefusion=1: one patch on one stage is the serial run; leave it 0 (or "
                   ">= 2: PipeFusion's serial emulation over that many patches)");
    /* PipeFusion's serial emulation: one stage over the pipeline's patches, with their rules */
    c.num_pipeline_patch = 4;
    c.warmup_steps = 2;
    EXPECT_VALID(c, &env);
    c.num_pipeline_patch = 3;
    EXPECT_INVALID(c, &env,
                   "pipefusion=1 with num_pipeline_patch=3 needs latent height divisible by 3 x patch_size (2); got 16");
    c.num_pipeline_patch = 2;
    c.patch = 2;
    gloo(&c);
    EXPECT_INVALID(c, &env,
                   "patch=2 with num_pipeline_patch=2: patch parallel (DistriFusion) replaces PipeFusion's pipeline; "
                   "use one or the other");
    c = dit();
    c.n_pipefusion_layers = 1;
    c.pipefusion_layers[0] = 4;
    EXPECT_INVALID(c, &env, "pipefusion_layers=[4]: only meaningful with pipefusion > 1 (got pipefusion=1)");
    c = dit();
    gloo(&c);
    c.pipefusion = 4;
    c.num_pipeline_patch = 2;
    EXPECT_INVALID(c, &env,
                   "num_pipeline_patch=2 with pipefusion=4: needs at least one patch per stage (num_pipeline_patch >= "
                   "pipefusion)");
    c = dit();
    gloo(&c);
    c.pipefusion = 8;
    EXPECT_INVALID(c, &env, "pipefusion=8: dit-tiny has 4 blocks; each stage needs at least one block (pipefusion <= 4)");
    c = flux("flux-tiny");
    gloo(&c);
    c.pipefusion = 8;
    EXPECT_INVALID(c, &env,
                   "pipefusion=8: flux-tiny has 4 blocks (2 double + 2 single); each stage needs at least one block "
                   "(pipefusion <= 4)");
    c = dit();
    gloo(&c);
    c.pipefusion = 2;
    c.n_pipefusion_layers = 3;
    c.pipefusion_layers[0] = 1;
    c.pipefusion_layers[1] = 1;
    c.pipefusion_layers[2] = 2;
    EXPECT_INVALID(c, &env, "pipefusion_layers=[1, 1, 2]: 3 stages listed for pipefusion=2");
    c.n_pipefusion_layers = 2;
    c.pipefusion_layers[0] = 4;
    c.pipefusion_layers[1] = 0;
    EXPECT_INVALID(c, &env, "pipefusion_layers=[4, 0]: stage 1 has 0 blocks; each stage needs at least one");
    c.pipefusion_layers[0] = 1;
    c.pipefusion_layers[1] = 2;
    EXPECT_INVALID(c, &env,
                   "pipefusion_layers=[1, 2]: sums to 3 blocks but dit-tiny has 4 blocks; the stages must cover the "
                   "depth");
    c.pipefusion_layers[1] = 3;
    EXPECT_VALID(c, &env);
    /* the example: latent height 30 */
    c = flux("flux-tiny");
    gloo(&c);
    c.width = 128;
    c.height = 240;
    c.pipefusion = 4;
    c.num_pipeline_patch = 4;
    EXPECT_INVALID(c, &env,
                   "pipefusion=4 with num_pipeline_patch=4 needs latent height divisible by 4 x patch_size (2); got 30");
    /* with a sequence split inside each pipeline patch */
    c = flux("flux-tiny");
    gloo(&c);
    c.width = c.height = 192;
    c.pipefusion = 2;
    c.ulysses = 2;
    c.ring = 2;
    EXPECT_INVALID(c, &env,
                   "pipefusion=2 with num_pipeline_patch=2 and ulysses x ring = 4 needs each pipeline patch's latent "
                   "height (24 / 2 = 12) to be a multiple of patch_size (2) x 4");
    c.width = c.height = 128;
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(patch_and_warmup) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    gloo(&c);
    c.patch = 3;
    EXPECT_INVALID(c, &env, "patch=3 needs latent height divisible by 3 x patch_size (2); got 16");
    c.patch = 2;
    c.warmup_steps = -1;
    EXPECT_INVALID(c, &env, "warmup_steps=-1: must be >= 0");
    c.warmup_steps = 12;
    EXPECT_INVALID(c, &env, "warmup_steps=12 > steps=10: warmup steps must not exceed the steps");
    c.warmup_steps = 10;
    EXPECT_VALID(c, &env);
    c = dit();
    c.warmup_steps = 3;
    EXPECT_INVALID(c, &env,
                   "warmup_steps=3: only meaningful with pipefusion, its pipeline patches or patch parallel (none "
                   "here); leave it at 1");
}
END_TEST

START_TEST(placement) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    c.dp = 2;
    c.n_items = 2;
    EXPECT_INVALID(c, &env, "backend=self with world 2: self runs one rank; use gloo (or nccl) for world > 1");
    snprintf(c.backend, sizeof c.backend, "nccl");
    EXPECT_INVALID(c, &env, "backend=nccl needs device=cuda (got device=cpu): NCCL moves GPU buffers");
    snprintf(c.device, sizeof c.device, "cuda");
    EXPECT_VALID(c, &env);
    c.dp = 4;
    c.n_items = 4;
    EXPECT_INVALID(c, &env, "backend=nccl with world 4 needs one GPU per rank; 2 visible (device=cuda)");
    snprintf(c.device, sizeof c.device, "cuda:H200");
    EXPECT_INVALID(c, &env, "backend=nccl with world 4 needs one GPU per rank; 2 visible match (device=cuda:H200)");
    snprintf(c.device, sizeof c.device, "cuda:A100");
    EXPECT_INVALID(c, &env, "device=cuda:A100: no visible GPU name contains 'A100' (visible: NVIDIA H200, NVIDIA H200)");
    env.n_gpus = 0;
    snprintf(c.device, sizeof c.device, "cuda");
    EXPECT_INVALID(c, &env, "device=cuda: no visible GPU");
    /* gloo on a GPU stages through host memory: any number of ranks per GPU */
    env = test_env();
    gloo(&c);
    EXPECT_VALID(c, &env);
    snprintf(c.device, sizeof c.device, "cuda:#0"); /* all 4 ranks on GPU 0 */
    EXPECT_VALID(c, &env);
    env.n_gpus = 1;
    snprintf(c.device, sizeof c.device, "cuda");
    EXPECT_VALID(c, &env);
    /* ... but NCCL needs one GPU per rank */
    snprintf(c.backend, sizeof c.backend, "nccl");
    c.dp = 2;
    c.n_items = 2;
    EXPECT_INVALID(c, &env, "backend=nccl with world 2 needs one GPU per rank; 1 visible (device=cuda)");
    env = test_env();
    snprintf(c.device, sizeof c.device, "cuda:#0");
    EXPECT_INVALID(c, &env, "backend=nccl with world 2 needs one GPU per rank; 1 visible match (device=cuda:#0)");
}
END_TEST

START_TEST(inject_rules) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    snprintf(c.inject, sizeof c.inject, "bit-flip");
    EXPECT_INVALID(c, &env,
                   "inject=bit-flip: unknown fault injection (known: dp-rank-layout dp-shared-noise ulysses-head-order "
                   "ring-no-rescale pipefusion-cache-leak rope-offset attn-scale timestep-skew norm-eps-rank "
                   "bf16-layer-rank cfg-combine-order dp-image-order vae-decode-rank temb-period-rank "
                   "nondet-dp-rank dp-latents-order noise-bf16-rank weight-leak-rank ring-lse-skew attn-scale-ulp-rank "
                     "ring-reverse-rank latents-bf16-rank dp-gather-row "
                     "patch-stale-rows pipefusion-skip-refresh te-norm-eps-rank pipefusion-block-overlap "
                     "cfg-stale-half attn-scale-step-rank attn-scale-late pipefusion-stream-stale act-bf16-rank "
                     "warmup-late patch-text-stale step-noise-index)");
    snprintf(c.inject, sizeof c.inject, "ring-no-rescale");
    EXPECT_INVALID(c, &env,
                   "inject=ring-no-rescale: ring-no-rescale needs ring > 1 (got ring=1); the fault could not change "
                   "this case");
    gloo(&c);
    c.ring = 2;
    EXPECT_VALID(c, &env);
    snprintf(c.inject, sizeof c.inject, "rope-offset");
    EXPECT_INVALID(c, &env,
                   "inject=rope-offset: rope-offset applies to FLUX only: dit uses absolute position embeddings, not "
                   "RoPE; the fault could not change this case");
    c = flux("flux-tiny");
    gloo(&c);
    c.ulysses = 2;
    snprintf(c.inject, sizeof c.inject, "rope-offset");
    EXPECT_VALID(c, &env);
    /* the case's precision, device and items reach the rules */
    snprintf(c.inject, sizeof c.inject, "bf16-layer-rank");
    EXPECT_VALID(c, &env);
    snprintf(c.precision, sizeof c.precision, "bf16");
    EXPECT_INVALID(c, &env,
                   "inject=bf16-layer-rank: bf16-layer-rank needs an fp32 case: with bf16 / fp16 GEMMs the layer is in "
                   "that precision on every rank already; the fault could not change this case");
    c = dit();
    gloo(&c);
    c.dp = 2;
    c.n_items = 2;
    snprintf(c.inject, sizeof c.inject, "dp-image-order");
    EXPECT_INVALID(c, &env,
                   "inject=dp-image-order: dp-image-order needs >= 2 items per dp group to put in the wrong order (got "
                   "2 items over dp=2); the fault could not change this case");
    snprintf(c.inject, sizeof c.inject, "vae-decode-rank");
    EXPECT_VALID(c, &env);
}
END_TEST

/* ---- valid configs of every strategy -------------------------------------------------- */

/* numerics=invariant: what it cannot make bitwise the serial run is refused with the reason */
START_TEST(invariant_rules) {
    rp_validate_env env = test_env();
    rp_case c = flux("flux-tiny");
    gloo(&c);
    snprintf(c.numerics, sizeof c.numerics, "exact");
    EXPECT_INVALID(c, &env, "numerics=exact: unknown (known: default invariant)");
    snprintf(c.numerics, sizeof c.numerics, "invariant");
    c.ring = 2;
    EXPECT_VALID(c, &env);
    c.width = c.height = 512;                    /* 1024 image tokens: Bk 64; 32 text: Bk 4 */
    c.ring = 16;                                 /* 2 text tokens a rank: half a block */
    EXPECT_PREFIX(c, &env, "numerics=invariant with ring=16: each ring rank holds 2 of the 32 text tokens, not a "
                           "whole number of the canonical key blocks of 4 tokens");
    c.ring = 8;
    EXPECT_VALID(c, &env);
    c = dit();
    snprintf(c.numerics, sizeof c.numerics, "invariant");
    snprintf(c.attention, sizeof c.attention, "flash");
    EXPECT_PREFIX(c, &env, "numerics=invariant with attention=flash: ");
    c = dit();
    snprintf(c.numerics, sizeof c.numerics, "invariant");
    c.reduce_split = 1;
    EXPECT_PREFIX(c, &env, "numerics=invariant with reduce_split=1: ");
    c = dit();
    snprintf(c.numerics, sizeof c.numerics, "invariant");
    snprintf(c.device, sizeof c.device, "cuda");
    snprintf(c.precision, sizeof c.precision, "tf32"); /* the invariant kernels round to fp32 or bf16 only */
    EXPECT_PREFIX(c, &env, "numerics=invariant with device=cuda and precision=tf32: ");
    snprintf(c.precision, sizeof c.precision, "bf16");
    EXPECT_VALID(c, &env);
    c = dit();
    gloo(&c);
    snprintf(c.numerics, sizeof c.numerics, "invariant");
    c.pipefusion = 2; /* exact through its warmup, approximate after: the canonical attention takes its keys */
    EXPECT_VALID(c, &env);
    c.ulysses = 2; /* but not a stage's keys split over ulysses / ring */
    EXPECT_PREFIX(c, &env, "numerics=invariant with pipefusion=2 and ulysses x ring = 2: ");
}
END_TEST

START_TEST(valid_strategies) {
    rp_validate_env env = test_env();
    rp_case c = dit();
    EXPECT_VALID(c, &env);                       /* world 1, self */
    c = sd3();
    EXPECT_VALID(c, &env);
    c = flux("flux-tiny");
    EXPECT_VALID(c, &env);

    c = dit();                                   /* dp */
    gloo(&c);
    c.dp = 2;
    c.n_items = 2;
    c.items[1].class_id = 7;
    EXPECT_VALID(c, &env);
    c = dit();                                   /* cfg parallel */
    gloo(&c);
    c.cfg_parallel = 2;
    EXPECT_VALID(c, &env);
    c = sd3();                                   /* ulysses */
    gloo(&c);
    c.ulysses = 2;
    EXPECT_VALID(c, &env);
    c = flux("flux-tiny");                       /* ring */
    gloo(&c);
    c.ring = 4;
    EXPECT_VALID(c, &env);
    c = flux("flux-tiny");                       /* ulysses x ring */
    gloo(&c);
    c.ulysses = 2;
    c.ring = 2;
    EXPECT_VALID(c, &env);
    c = sd3();                                   /* pipefusion with explicit stages */
    gloo(&c);
    c.pipefusion = 2;
    c.warmup_steps = 2;
    c.n_pipefusion_layers = 2;
    c.pipefusion_layers[0] = c.pipefusion_layers[1] = 1;
    EXPECT_VALID(c, &env);
    c = dit();                                   /* pipefusion, more patches than stages */
    gloo(&c);
    c.pipefusion = 2;
    c.num_pipeline_patch = 4;
    EXPECT_VALID(c, &env);
    c = dit();                                   /* patch parallel */
    gloo(&c);
    c.patch = 2;
    c.warmup_steps = 2;
    EXPECT_VALID(c, &env);
    c = dit();                                   /* hybrid: dp x cfg x pipefusion x ulysses */
    gloo(&c);
    c.dp = 2;
    c.cfg_parallel = 2;
    c.pipefusion = 2;
    c.ulysses = 2;
    c.n_items = 2;
    env.world = 16;
    EXPECT_VALID(c, &env);
    env = test_env();
    c = flux("flux-dev");                        /* real shapes: 57 blocks over 4 stages */
    gloo(&c);
    c.width = c.height = 1024;
    c.pipefusion = 4;
    c.ulysses = 2;
    EXPECT_VALID(c, &env);
    c = dit();                                   /* nccl, one GPU per rank */
    snprintf(c.backend, sizeof c.backend, "nccl");
    snprintf(c.device, sizeof c.device, "cuda:H200");
    c.ulysses = 2;
    EXPECT_VALID(c, &env);
}
END_TEST

START_TEST(host_env_and_help) {
    rp_validate_env env;
    rp_validate_env_host(&env);
    ck_assert_int_eq(env.world, 0);
    ck_assert(env.n_gpus >= 0);
    rp_case c = dit();
    rp_error e = {0};
    ck_assert_int_eq(rp_case_validate(&c, NULL, &e), RP_OK);   /* NULL = the host */
    const char *h = rp_validate_describe_rules();
    ck_assert_ptr_nonnull(strstr(h, "vae_scale_factor"));
    ck_assert_ptr_nonnull(strstr(h, "ring-no-rescale"));
}
END_TEST

/* ---- the injection registry --------------------------------------------------------- */

START_TEST(inject_registry) {
    rp_inject_id id;
    rp_error e = {0};
    ck_assert_int_eq(rp_inject_parse("", &id, &e), RP_OK);
    ck_assert_int_eq(id, RP_INJECT_NONE);
    ck_assert_int_eq(rp_inject_parse(NULL, &id, &e), RP_OK);
    ck_assert_int_eq(id, RP_INJECT_NONE);
    ck_assert_str_eq(rp_inject_name(RP_INJECT_NONE), "");
    /* every name round-trips, has a description, and is listed */
    for (int i = 1; i < RP_INJECT_COUNT; i++) {
        const char *n = rp_inject_name((rp_inject_id)i);
        ck_assert_int_eq(rp_inject_parse(n, &id, &e), RP_OK);
        ck_assert_int_eq(id, i);
        ck_assert(strlen(rp_inject_description((rp_inject_id)i)) > 10);
        ck_assert(strlen(rp_inject_scope((rp_inject_id)i)) > 5);
        ck_assert_ptr_nonnull(strstr(rp_inject_names(), n));
    }
    ck_assert_int_eq(rp_inject_parse("ring-rescale", &id, &e), RP_ERR_INVALID);
    ck_assert_str_eq(e.msg,
                     "inject=ring-rescale: unknown fault injection (known: dp-rank-layout dp-shared-noise "
                     "ulysses-head-order ring-no-rescale pipefusion-cache-leak rope-offset attn-scale timestep-skew "
                     "norm-eps-rank bf16-layer-rank cfg-combine-order dp-image-order vae-decode-rank temb-period-rank "
                     "nondet-dp-rank dp-latents-order noise-bf16-rank weight-leak-rank ring-lse-skew attn-scale-ulp-rank "
                     "ring-reverse-rank latents-bf16-rank dp-gather-row "
                     "patch-stale-rows pipefusion-skip-refresh te-norm-eps-rank pipefusion-block-overlap "
                     "cfg-stale-half attn-scale-step-rank attn-scale-late pipefusion-stream-stale act-bf16-rank "
                     "warmup-late patch-text-stale step-noise-index)");
}
END_TEST

START_TEST(inject_applicability) {
    const rp_inject_layout one = {.deg = {.dp = 1, .cfg = 1, .ulysses = 1, .ring = 1, .pipefusion = 1, .patch = 1},
                                  .steps = 10, .items = 4};
    char why[256];
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_NONE, RP_FAMILY_DIT, &one, why, sizeof why), 1);
    /* world 1: nothing but NONE can act */
    for (int i = 1; i < RP_INJECT_COUNT; i++)
        ck_assert_int_eq(rp_inject_applies((rp_inject_id)i, RP_FAMILY_FLUX, &one, why, sizeof why), 0);
    rp_inject_layout l = one;
    l.deg.dp = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_DP_RANK_LAYOUT, RP_FAMILY_SD3, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_DP_SHARED_NOISE, RP_FAMILY_DIT, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ULYSSES_HEAD_ORDER, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "ulysses-head-order needs ulysses > 1 (got ulysses=1)");
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE, RP_FAMILY_DIT, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ROPE_OFFSET, RP_FAMILY_FLUX, &l, why, sizeof why), 0);
    ck_assert_str_eq(why,
                     "rope-offset needs a layout where ranks compute positions for their part of the image (ulysses x "
                     "ring > 1, patch > 1 or pipefusion > 1); got ulysses=1 ring=1 patch=1 pipefusion=1");
    l = one;
    l.deg.ulysses = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ULYSSES_HEAD_ORDER, RP_FAMILY_SD3, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_NO_RESCALE, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "ring-no-rescale needs ring > 1 (got ring=1)");
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ROPE_OFFSET, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    /* act-bf16-rank plants a bf16-only path of the default numerics on the CPU */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ACT_BF16_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "act-bf16-rank needs a bf16 case on the CPU under default numerics (the path it plants: "
                          "an fp32 case runs none of it)");
    l.low_precision = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ACT_BF16_RANK, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    l.invariant = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ACT_BF16_RANK, RP_FAMILY_SD3, &l, NULL, 0), 0);
    l.invariant = 0;
    l.on_device = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ACT_BF16_RANK, RP_FAMILY_SD3, &l, NULL, 0), 0);
    /* a ring of two has one neighbour: turning it around changes nothing */
    l = one;
    l.deg.ring = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_REVERSE_RANK, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "ring-reverse-rank needs ring >= 3 (got ring=2)");
    l.deg.ring = 3;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_REVERSE_RANK, RP_FAMILY_SD3, &l, NULL, 0), 1);
    l.deg.ring = 1;
    l.deg.ulysses = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ROPE_OFFSET, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "rope-offset applies to FLUX only: sd3 uses absolute position embeddings, not RoPE");
    l = one;
    l.deg.pipefusion = 2;
    l.pipeline = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_PIPEFUSION_CACHE_LEAK, RP_FAMILY_DIT, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ROPE_OFFSET, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    l.steps = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_TIMESTEP_SKEW, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "timestep-skew needs steps >= 2: step 0 has no previous timestep (got steps=1)");
    l.steps = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_TIMESTEP_SKEW, RP_FAMILY_DIT, &l, NULL, 0), 1);
    l = one;
    l.deg.ring = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_NO_RESCALE, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_PIPEFUSION_CACHE_LEAK, RP_FAMILY_FLUX, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "pipefusion-cache-leak needs PipeFusion's pipeline (pipefusion > 1; got pipefusion=1)");
    l.pipeline = 2; /* the serial emulation runs the pipeline's cache on one stage */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_PIPEFUSION_CACHE_LEAK, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    l.pipeline = 0;
    /* ring-lse-skew lives in the default ring merge: invariant numerics never runs it */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_LSE_SKEW, RP_FAMILY_SD3, &l, NULL, 0), 1);
    l.invariant = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_LSE_SKEW, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "ring-lse-skew acts in the default ring merge; numerics invariant folds the canonical blocks "
                          "instead");
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_NO_RESCALE, RP_FAMILY_SD3, &l, NULL, 0), 1);
    l = one;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_RING_LSE_SKEW, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "ring-lse-skew needs ring > 1 (got ring=1)");
    /* attn-scale-ulp-rank lives in the default attention kernels of one rank */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "attn-scale-ulp-rank needs world > 1 (got world=1)");
    l.deg.dp = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_DIT, &l, NULL, 0), 1);
    l.deg.dp = 1, l.deg.ulysses = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    l.deg.ring = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_FLUX, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "attn-scale-ulp-rank acts in the default attention kernels; with ring > 1 the ring's own "
                          "kernel runs instead (got ring=2)");
    l.deg.ring = 1, l.invariant = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "attn-scale-ulp-rank acts in the CPU's default attention kernels; numerics invariant runs "
                          "the canonical attention instead");
    l.invariant = 0, l.on_device = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "attn-scale-ulp-rank acts in the CPU's default attention kernels; a device runs its own "
                          "attention");
    l.on_device = 0, l.low_precision = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_ATTN_SCALE_ULP_RANK, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "attn-scale-ulp-rank needs an fp32 case: with bf16 / fp16 GEMM inputs one fp32 ulp of the "
                          "scale rounds away");
}
END_TEST

/* The faults of the classes a per-layer view of rank 0 misses (issue 17). */
START_TEST(inject_applicability_escaped) {
    const rp_inject_layout one = {.deg = {.dp = 1, .cfg = 1, .ulysses = 1, .ring = 1, .pipefusion = 1, .patch = 1},
                                  .steps = 6, .items = 4};
    char why[256];
    rp_inject_layout l = one;
    l.deg.ulysses = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_NORM_EPS_RANK, RP_FAMILY_SD3, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_TEMB_PERIOD_RANK, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_BF16_LAYER_RANK, RP_FAMILY_DIT, &l, NULL, 0), 1);
    l.low_precision = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_BF16_LAYER_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "bf16-layer-rank needs an fp32 case: with bf16 / fp16 GEMMs the layer is in that precision "
                          "on every rank already");
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_NORM_EPS_RANK, RP_FAMILY_DIT, &l, NULL, 0), 1);
    l.deg.pipefusion = 2; /* the last rank is the last stage: it does not run block 0 */
    l.deg.ulysses = 1;
    l.low_precision = 0;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_BF16_LAYER_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "needs pipefusion = 1"));
    l.deg.pipefusion = 1;
    l.deg.ulysses = 2;
    l.on_device = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_BF16_LAYER_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "a device runs its GEMMs in its own precision"));
    /* image faults need dp: only dp group leaders decode */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_VAE_DECODE_RANK, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_DP_IMAGE_ORDER, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_CFG_COMBINE_ORDER, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "cfg-combine-order needs cfg_parallel = 2 (got cfg_parallel=1)");
    l = one;
    l.deg.cfg = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_CFG_COMBINE_ORDER, RP_FAMILY_SD3, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_CFG_COMBINE_ORDER, RP_FAMILY_FLUX, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "cfg-combine-order needs classifier-free guidance: FLUX has none (embedded guidance)");
    l.steps = 1;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_CFG_COMBINE_ORDER, RP_FAMILY_DIT, &l, why, sizeof why), 0);
    ck_assert_ptr_nonnull(strstr(why, "needs steps >= 2"));
    l = one;
    l.deg.dp = 2;
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_VAE_DECODE_RANK, RP_FAMILY_FLUX, &l, NULL, 0), 1);
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_DP_IMAGE_ORDER, RP_FAMILY_SD3, &l, NULL, 0), 1);
    l.items = 2; /* one item per group: no order to get wrong */
    ck_assert_int_eq(rp_inject_applies(RP_INJECT_DP_IMAGE_ORDER, RP_FAMILY_SD3, &l, why, sizeof why), 0);
    ck_assert_str_eq(why, "dp-image-order needs >= 2 items per dp group to put in the wrong order (got 2 items over "
                          "dp=2)");
}
END_TEST

int main(void) {
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("validate");
    tcase_add_test(tc, flux_doubled_vae_factor);
    tcase_add_test(tc, model_and_items);
    tcase_add_test(tc, sampling_values);
    tcase_add_test(tc, numeric_values);
    tcase_add_test(tc, backend_and_device_names);
    tcase_add_test(tc, image_size);
    tcase_add_test(tc, degrees);
    tcase_add_test(tc, sequence_split);
    tcase_add_test(tc, pipefusion_rules);
    tcase_add_test(tc, patch_and_warmup);
    tcase_add_test(tc, placement);
    tcase_add_test(tc, inject_rules);
    tcase_add_test(tc, valid_strategies);
    tcase_add_test(tc, invariant_rules);
    tcase_add_test(tc, host_env_and_help);
    tcase_add_test(tc, inject_registry);
    tcase_add_test(tc, inject_applicability);
    tcase_add_test(tc, inject_applicability_escaped);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
