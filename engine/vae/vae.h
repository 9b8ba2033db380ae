/* vae.h — the AutoencoderKL decoder (SD / DiT "sd-vae-ft-ema"), as diffusers.
 *
 * Names follow diffusers' AutoencoderKL state_dict:
 *   post_quant_conv.{weight,bias} (when used) · decoder.conv_in.{weight,bias}
 *   decoder.mid_block.resnets.{0,1}.{norm1,conv1,norm2,conv2}.{weight,bias}
 *   decoder.mid_block.attentions.0.{group_norm,to_q,to_k,to_v,to_out.0}.{weight,bias}
 *   decoder.up_blocks.I.resnets.J.{norm1,conv1,norm2,conv2,conv_shortcut}.{weight,bias}
 *   decoder.up_blocks.I.upsamplers.0.conv.{weight,bias}   (all but the last up block)
 *   decoder.conv_norm_out.{weight,bias} · decoder.conv_out.{weight,bias}
 * GroupNorm eps 1e-6, SiLU, nearest 2x upsample + 3x3 conv, single-head mid attention. */
#ifndef REPRO_VAE_H
#define REPRO_VAE_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"
#include "../params.h"
#include "../safetensors.h"

#define RP_VAE_MAX_LEVELS 6

typedef struct rp_vae_config {
    char preset[32];
    int latent_channels;                 /* 4 (SD) or 16 (SD3/FLUX) */
    int n_levels;                        /* len(block_out_channels) */
    int block_out[RP_VAE_MAX_LEVELS];    /* e.g. 128, 256, 512, 512 */
    int layers_per_block;                /* decoder up blocks have layers_per_block + 1 resnets */
    int groups;                          /* GroupNorm groups (32) */
    int use_post_quant_conv;             /* SD: 1; SD3/FLUX: 0 */
    float scaling_factor;                /* latents are divided by this before decoding */
    float shift_factor;                  /* ... after which this is added (SD3/FLUX) */
} rp_vae_config;

/* "vae-tiny" (CI), "vae-mini" (the classifier's test sets, 2 levels: 16x16 -> 32x32),
 * "vae-digits" (trained, shipped weights, 2 levels: 8x8 -> 16x16) or "sd-vae" (real
 * shapes), 4 latent channels; "vae-tiny-16" (CI), "vae-mini-16" (test sets), "sd3-vae" or
 * "flux-vae" (real shapes), 16 latent channels, no post_quant_conv. */
rp_status rp_vae_preset(const char *name, rp_vae_config *cfg, rp_error *err);
void rp_vae_param_specs(const rp_vae_config *cfg, rp_param_list *l);

/* Spatial upscale factor: 2^(n_levels - 1). */
int rp_vae_scale_factor(const rp_vae_config *cfg);

typedef struct rp_vae rp_vae;
rp_status rp_vae_load(const rp_vae_config *cfg, const rp_st_file *f, rp_vae **out, rp_error *err);
void rp_vae_free(rp_vae *m);

/* z (B, Cl, h, w) model-space latents -> img (B, 3, h*f, w*f) in about [-1, 1].
 * Applies 1/scaling_factor and shift_factor first. */
rp_status rp_vae_decode(const rp_vae *m, const rp_ctx *ctx, float *img, const float *z,
                        int B, int h, int w, rp_error *err);

/* img (B, 3, H, W) in [-1, 1] -> rgb (B, H, W, 3) uint8: round(clamp((x+1)/2, 0, 1) * 255). */
void rp_image_to_rgb8(uint8_t *rgb, const float *img, int B, int H, int W);
/* The same with truncate 1: the cast without rounding (floor(clamp((x+1)/2, 0, 1) * 255),
 * as torch's .byte() / numpy's astype(uint8) do); the vae-decode-rank fault's conversion. */
void rp_image_to_rgb8_cast(uint8_t *rgb, const float *img, int B, int H, int W, int truncate);

#endif
