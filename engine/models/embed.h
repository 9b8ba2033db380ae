/* embed.h — the conditioning embedders DiT, SD3 and FLUX share: a timestep's sinusoid
 * through a two-layer SiLU MLP, and that MLP alone (the pooled-text projection). */
#ifndef REPRO_EMBED_H
#define REPRO_EMBED_H

#include "../ctx.h"
#include "../ops.h"

/* out (B, D) = lin2(silu(lin1(in (B, lin1->in)))), D = lin1->out; hid (B, D) scratch.
 * diffusers' TimestepEmbedding and PixArtAlphaTextProjection (act "silu"), timm's
 * TimestepEmbedder.mlp. */
void rp_silu_mlp(const rp_ctx *ctx, float *out, float *hid, const float *in, int B, const rp_linear_w *lin1,
                 const rp_linear_w *lin2);

/* out (B, D) = rp_silu_mlp of Timesteps(F, flip_sin_to_cos, shift 0) of t (B): the
 * [cos, sin] sinusoid (max period 10000, as rp_par_max_period lets a fault move it) into
 * tfreq (B, F); hid (B, D) scratch. diffusers' time_proj + timestep_embedder, timm's
 * TimestepEmbedder. */
void rp_timestep_embedder(const rp_ctx *ctx, float *out, float *hid, float *tfreq, const float *t, int B, int F,
                          const rp_linear_w *lin1, const rp_linear_w *lin2);

#endif
