/* dit.h — DiT (Peebles & Xie), as facebookresearch/DiT models.py.
 *
 * Parameter names are the upstream state_dict's, so a converted DiT-XL-2-256x256.pt
 * (saved as safetensors) loads by name:
 *   pos_embed (1, T, C) · x_embedder.proj.{weight (C, Cin, p, p), bias}
 *   t_embedder.mlp.0.{weight (C, 256), bias} · t_embedder.mlp.2.{weight (C, C), bias}
 *   y_embedder.embedding_table.weight (num_classes + 1, C)     (last row = null class)
 *   blocks.N.attn.qkv.{weight (3C, C), bias} · blocks.N.attn.proj.{weight, bias}
 *   blocks.N.mlp.fc1.{weight (4C, C), bias} · blocks.N.mlp.fc2.{weight (C, 4C), bias}
 *   blocks.N.adaLN_modulation.1.{weight (6C, C), bias}
 *   final_layer.linear.{weight (p*p*Cout, C), bias} · final_layer.adaLN_modulation.1.{weight (2C, C), bias}
 * LayerNorms have no affine (eps 1e-6); MLP uses GELU(tanh); Cout = 2*Cin with learned sigma. */
#ifndef REPRO_DIT_H
#define REPRO_DIT_H

#include "../ctx.h"
#include "../error.h"
#include "../params.h"
#include "../safetensors.h"

typedef struct rp_dit_config {
    char preset[32];
    int input_size;   /* latent H = W */
    int patch;        /* p */
    int in_channels;  /* Cin (4) */
    int hidden;       /* C */
    int depth;
    int heads;
    int mlp_ratio;    /* 4 */
    int num_classes;  /* 1000; the null (CFG) class is num_classes */
    int learn_sigma;  /* 1: output channels = 2 * Cin, first Cin are eps */
    int freq_dim;     /* timestep frequency embedding size (256) */
} rp_dit_config;

/* Fills cfg for "dit-tiny", "dit-digits" (trained, 10 classes, shipped weights: weights_cache.h), "dit-xl-2-128", "dit-xl-2-256", "dit-xl-2-512". Unknown name -> RP_ERR_NOT_FOUND
 * listing the known presets. */
rp_status rp_dit_preset(const char *name, rp_dit_config *cfg, rp_error *err);

/* Appends every parameter of cfg (upstream names, shapes, init rules) to l. */
void rp_dit_param_specs(const rp_dit_config *cfg, rp_param_list *l);

typedef struct rp_dit rp_dit;

/* Loads weights by name from f (shape-checked). */
rp_status rp_dit_load(const rp_dit_config *cfg, const rp_st_file *f, rp_dit **out, rp_error *err);
void rp_dit_free(rp_dit *m);
const rp_dit_config *rp_dit_cfg(const rp_dit *m);

/* One forward pass.
 *   x (B, Cin, S, S) noisy latents, t (B) timesteps (float, 0..999), y (B) class ids
 *   -> out (B, Cout, S, S)
 * Records a trace per block when ctx->trace is set ("x_embedder", "t_embedder",
 * "y_embedder", "blocks.N.attn", "blocks.N.mlp", "blocks.N", "final_layer"). */
rp_status rp_dit_forward(const rp_dit *m, const rp_ctx *ctx, float *out, const float *x,
                         const float *t, const int *y, int B, rp_error *err);

/* Multiply-accumulates of one forward for one image (for GFLOP/s reporting). */
double rp_dit_macs(const rp_dit_config *cfg);

#endif
