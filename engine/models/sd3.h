/* sd3.h — the SD3 MMDiT transformer, as diffusers SD3Transformer2DModel: SD3 Medium,
 * SD3.5 Large's layout (qk_norm) and SD3.5 Medium's MMDiT-X (dual_attention_layers: in
 * its first blocks a second, image-only self-attention attn2 and a 9-way modulation,
 * diffusers' JointTransformerBlock(use_dual_attention=True) with SD35AdaLayerNormZeroX).
 *
 * Parameter names are diffusers' state_dict names, so a diffusers SD3 transformer
 * checkpoint (diffusion_pytorch_model*.safetensors) loads by name. D = heads * head_dim,
 * p = patch, M = pos_embed_max_size, F = 4 * D (FeedForward mult 4):
 *   pos_embed.pos_embed (1, M*M, D)  (a persistent buffer; cropped at the centre)
 *   pos_embed.proj.{weight (D, Cin, p, p), bias (D)}
 *   time_text_embed.timestep_embedder.linear_1.{weight (D, 256), bias} · .linear_2 (D, D)
 *   time_text_embed.text_embedder.linear_1.{weight (D, Dpool), bias} · .linear_2 (D, D)
 *   context_embedder.{weight (D, Djoint), bias}
 *   transformer_blocks.N.norm1.linear (6D, D)                      AdaLayerNormZero, or
 *                                     (9D, D) in a dual-attention block (SD35AdaLayerNormZeroX)
 *   transformer_blocks.N.norm1_context.linear (6D, D), or (2D, D) in the last block
 *                                       (context_pre_only: AdaLayerNormContinuous)
 *   transformer_blocks.N.attn.{norm_q, norm_k}.weight (head_dim)   only with qk_norm
 *   transformer_blocks.N.attn.{to_q, to_k, to_v, add_k_proj, add_v_proj, add_q_proj,
 *                              to_out.0}.{weight (D, D), bias}
 *   transformer_blocks.N.attn.to_add_out (D, D)                    not in the last block
 *   transformer_blocks.N.attn.{norm_added_q, norm_added_k}.weight (head_dim)  qk_norm only
 *   transformer_blocks.N.attn2.{norm_q, norm_k}.weight (head_dim)  dual-attention blocks, qk_norm
 *   transformer_blocks.N.attn2.{to_q, to_k, to_v, to_out.0}.{weight (D, D), bias}
 *                                       dual-attention blocks only (N < dual_attention_layers)
 *   transformer_blocks.N.ff.net.0.proj (F, D) · ff.net.2 (D, F)
 *   transformer_blocks.N.ff_context.net.0.proj · ff_context.net.2  not in the last block
 *   norm_out.linear (2D, D)   (AdaLayerNormContinuous: scale, then shift)
 *   proj_out.{weight (p*p*Cout, D), bias}
 * Every linear has a bias. LayerNorms have no affine (eps 1e-6); RMSNorm eps 1e-6;
 * FeedForward uses GELU(tanh). */
#ifndef REPRO_SD3_H
#define REPRO_SD3_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"
#include "../params.h"
#include "../safetensors.h"

typedef struct rp_sd3_config {
    char preset[32];
    int sample_size;            /* latent H = W at training; sets nothing in the forward
                                   (the pos_embed buffer is stored), kept for defaults */
    int patch;                  /* p */
    int in_channels;            /* Cin (16) */
    int out_channels;           /* Cout (16) */
    int depth;                  /* num_layers; the last block is context_pre_only */
    int heads;
    int head_dim;               /* D = heads * head_dim */
    int joint_attention_dim;    /* Djoint: width of the text-encoder context (4096) */
    int caption_projection_dim; /* context_embedder output; must equal D */
    int pooled_projection_dim;  /* Dpool (2048) */
    int pos_embed_max_size;     /* M: the pos_embed table is (M, M) positions */
    int qk_norm;                /* 1: RMSNorm (eps 1e-6) on q, k, added q, added k per head
                                   (and attn2's q, k) */
    int dual_attention_layers;  /* blocks [0, this) are MMDiT-X dual-attention blocks (attn2,
                                   9-way norm1): diffusers' dual_attention_layers = (0..n-1);
                                   0 = plain MMDiT. May exceed depth (a --depth override keeps
                                   the first blocks, all dual then). */
    int mlp_ratio;              /* 4 */
    int freq_dim;               /* timestep frequency embedding size (256) */
    int context_len;            /* default text tokens L for tools (not a weight shape):
                                   SD3 pipelines use 77 CLIP + 256 T5 = 333 */
} rp_sd3_config;

/* Fills cfg for "sd3-tiny" (CI-sized, qk_norm on), "sd3-digits" (trained, shipped weights:
 * weights_cache.h), "sd3-medium" (SD3-medium shapes), "sd3.5-large" (SD3.5 Large: 38 blocks
 * of width 2432, qk_norm), "sd3.5-medium" (SD3.5 Medium: 24 blocks of width 1536, qk_norm,
 * dual attention in blocks 0..12) or "sd3.5-medium-tiny" (CI-sized MMDiT-X: 3 blocks, dual
 * attention in blocks 0, 1).
 * Unknown name -> RP_ERR_NOT_FOUND listing the known presets. */
rp_status rp_sd3_preset(const char *name, rp_sd3_config *cfg, rp_error *err);

/* Appends every parameter of cfg (diffusers names, shapes, synthetic init rules) to l. */
void rp_sd3_param_specs(const rp_sd3_config *cfg, rp_param_list *l);

typedef struct rp_sd3 rp_sd3;

/* Loads weights by name from f (shape-checked). Rejects an inconsistent cfg, and a
 * checkpoint whose blocks' attn2 presence disagrees with cfg->dual_attention_layers
 * (RP_ERR_SHAPE naming the block and the preset that fits). */
rp_status rp_sd3_load(const rp_sd3_config *cfg, const rp_st_file *f, rp_sd3 **out, rp_error *err);
void rp_sd3_free(rp_sd3 *m);
const rp_sd3_config *rp_sd3_cfg(const rp_sd3 *m);

/* One forward pass (diffusers SD3Transformer2DModel.forward, no ControlNet):
 *   x       (B, Cin, H, W)  noisy latents; H, W multiples of p, H/p and W/p <= M
 *                           (the pos_embed table is cropped at its centre)
 *   t       (B)             timesteps, float in [0, 1000] (sigma * 1000 for SD3)
 *   context (B, L, Djoint)  text-encoder hidden states (encoder_hidden_states)
 *   context_mask (B, L) or NULL: nonzero = attend to that text token, 0 = masked
 *                           (as a key only; diffusers' SD3 passes no mask = NULL)
 *   pooled  (B, Dpool)      pooled text projections
 *   -> out  (B, Cout, H, W)
 * Records a trace when ctx->trace is set: "pos_embed" (B,T,D) after adding the table,
 * "time_text_embed" (B,D), "context_embedder" (B,L,D), per block N
 * "transformer_blocks.N.attn" (B,T,D) and ".attn.context" (B,L,D; not in the last block)
 * (attention outputs before the gates), ".attn2" (B,T,D; dual-attention blocks, attn2's
 * output before its gate), ".ff" (B,T,D) and ".ff_context" (B,L,D; not in
 * the last block) (before the gates), "transformer_blocks.N" (B,T,D) image stream and
 * ".context" (B,L,D; not in the last block) after the block, then "proj_out" (B,T,p*p*Cout). */
rp_status rp_sd3_forward(const rp_sd3 *m, const rp_ctx *ctx, float *out, const float *x,
                         const float *t, const float *context, const uint8_t *context_mask,
                         const float *pooled, int B, int L, int H, int W, rp_error *err);

/* Multiply-accumulates of one forward for one image with L text tokens at latent
 * H x W (H or W <= 0: sample_size), including attention QK^T and PV. */
double rp_sd3_macs(const rp_sd3_config *cfg, int L, int H, int W);

#endif
