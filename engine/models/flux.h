/* flux.h — FLUX.1 transformer, as diffusers FluxTransformer2DModel.
 *
 * Parameter names are diffusers' state_dict names, so a FLUX.1-dev transformer
 * checkpoint (diffusion_pytorch_model*.safetensors) loads by name:
 *   x_embedder.{weight (C, 4*Cin), bias}              context_embedder.{weight (C, Dctx), bias}
 *   time_text_embed.timestep_embedder.linear_{1,2}     (C, 256), (C, C)
 *   time_text_embed.guidance_embedder.linear_{1,2}     (C, 256), (C, C)  (guidance_embeds only)
 *   time_text_embed.text_embedder.linear_{1,2}         (C, Dpool), (C, C)
 *   transformer_blocks.N (double stream, image + text weights kept apart):
 *     norm1.linear, norm1_context.linear               (6C, C)  AdaLayerNormZero
 *     attn.norm_q, attn.norm_k                         RMSNorm weight (D)
 *     attn.to_q, to_k, to_v, add_k_proj, add_v_proj, add_q_proj   (C, C)
 *     attn.to_out.0, attn.to_add_out                   (C, C)
 *     attn.norm_added_q, attn.norm_added_k             RMSNorm weight (D)
 *     ff.net.0.proj (M, C), ff.net.2 (C, M); ff_context.net.0.proj, ff_context.net.2
 *   single_transformer_blocks.N (one stream over [text, image]):
 *     norm.linear (3C, C) · proj_mlp (M, C) · proj_out (C, C + M)
 *     attn.norm_q, attn.norm_k (D) · attn.to_q, to_k, to_v (C, C)     (no out projection)
 *   norm_out.linear (2C, C)  AdaLayerNormContinuous, chunks (scale, shift)
 *   proj_out (4*Cin, C)
 * C = heads * head_dim, M = 4C; every Linear has a bias.
 *
 * Latents: the model works on 2x2-packed latent tokens (FluxPipeline._pack_latents);
 * rp_flux_forward takes and returns unpacked (B, Cin, H, W) and packs inside. */
#ifndef REPRO_FLUX_H
#define REPRO_FLUX_H

#include <stddef.h>
#include <stdint.h>

#include "../ctx.h"
#include "../error.h"
#include "../params.h"
#include "../safetensors.h"

typedef struct rp_flux_config {
    char preset[32];
    int in_channels;         /* Cin: latent channels (16); packed tokens carry 4 * Cin */
    int sample_size;         /* nominal latent H = W of the preset (tiny 16; dev 128 = 1024 px) */
    int text_len;            /* nominal text tokens L of the preset (tiny 16; dev 512) */
    int hidden;              /* C = heads * head_dim */
    int heads;
    int head_dim;            /* D */
    int n_double;            /* transformer_blocks */
    int n_single;            /* single_transformer_blocks */
    int axes_dims[3];        /* RoPE split of D over the id axes; sum = D, each even */
    int rope_theta;          /* 10000 */
    int joint_attention_dim; /* Dctx: text encoder (T5) width */
    int pooled_dim;          /* Dpool: pooled (CLIP) width */
    int guidance_embeds;     /* 1: time_text_embed has a guidance_embedder (FLUX.1-dev) */
    int mlp_ratio;           /* 4 */
    int freq_dim;            /* timestep / guidance sinusoid size (256) */
} rp_flux_config;

/* Fills cfg for "flux-tiny", "flux-dev", "flux-schnell" (FLUX.1-schnell: dev's shapes, no
 * guidance embedder) or "flux-tiny-schnell" (flux-tiny without it). Unknown name -> RP_ERR_NOT_FOUND listing
 * the known presets. */
rp_status rp_flux_preset(const char *name, rp_flux_config *cfg, rp_error *err);

/* Reduced-depth runs: keeps the first n_double double and n_single single blocks
 * (a value < 0 keeps the current count). Both must be within [0, current]; the
 * kept blocks' names (and synthetic weights) are those of the full model. */
rp_status rp_flux_set_depth(rp_flux_config *cfg, int n_double, int n_single, rp_error *err);

/* The depth options (registry.h's rule) applied to a preset config: depth 0 and
 * single_depth 0 leave it as is; depth alone keeps the preset's single:double ratio
 * round(depth * n_single / n_double). Counts above the preset's are refused, naming them. */
rp_status rp_flux_apply_depth(rp_flux_config *cfg, int depth, int single_depth, rp_error *err);

/* Appends every parameter of cfg (diffusers names, shapes, init rules) to l. */
void rp_flux_param_specs(const rp_flux_config *cfg, rp_param_list *l);

typedef struct rp_flux rp_flux;

/* Loads weights by name from f (shape-checked; extra tensors are ignored). */
rp_status rp_flux_load(const rp_flux_config *cfg, const rp_st_file *f, rp_flux **out, rp_error *err);
void rp_flux_free(rp_flux *m);
const rp_flux_config *rp_flux_cfg(const rp_flux *m);

/* One forward pass (velocity prediction), as FluxTransformer2DModel.forward with
 * FluxPipeline's ids (text ids 0; image ids (0, row, col) on the packed grid).
 *   x        (B, Cin, H, W)  unpacked latents; H, W even
 *   t        (B)             flow time in [0, 1]; multiplied by 1000 inside, as diffusers
 *   guidance (B) or NULL     guidance scale (x1000 inside); required iff cfg->guidance_embeds
 *   context  (B, L, Dctx)    text encoder states (may be NULL when L == 0)
 *   mask     (B, L) or NULL  text key mask, nonzero = attend; NULL = all (diffusers' FLUX
 *                            has none — the option is for padded-prompt experiments)
 *   pooled   (B, Dpool)      pooled text embedding
 *   -> out   (B, Cin, H, W)  unpacked model output
 * Records a trace per block when ctx->trace is set: "x_embedder" (B,N,C),
 * "time_text_embed" (B,C), "context_embedder" (B,L,C), "transformer_blocks.N.attn",
 * ".ff" (branch outputs before the gates) and "transformer_blocks.N", each (B, L+N, C)
 * with every item's text tokens first; "single_transformer_blocks.N.proj_out" (before
 * the gate) and "single_transformer_blocks.N" (B, L+N, C); "norm_out" (B,N,C);
 * "proj_out" (B,N,4Cin) — N = (H/2)(W/2) image tokens. */
rp_status rp_flux_forward(const rp_flux *m, const rp_ctx *ctx, float *out, const float *x,
                          const float *t, const float *guidance, const float *context,
                          const uint8_t *mask, const float *pooled, int B, int H, int W, int L,
                          rp_error *err);

/* Bytes of the one activation allocation rp_flux_forward makes for these shapes on the
 * CPU (ctx->dev NULL; the attention variant's own scratch, e.g. the math variant's (T, T)
 * scores, is extra). On a device (engine/device.h) the block is device memory and also
 * holds the uploaded inputs and the output: B (2 Cin H W + L Dctx + Dpool) floats more;
 * the RoPE tables, joint mask and scaled timesteps are then built in a host scratch of
 * about 2 T D + B T / 4 + 2 B floats and uploaded. */
size_t rp_flux_activation_bytes(const rp_flux_config *cfg, int B, int H, int W, int L, int with_mask);

/* Multiply-accumulates of one forward for one image of latent H x W with L text tokens. */
double rp_flux_macs(const rp_flux_config *cfg, int H, int W, int L);

#endif
