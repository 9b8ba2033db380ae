/* vae.c — the AutoencoderKL decoder, as diffusers' AutoencoderKL.decode.
 *
 * Structure (diffusers Decoder, norm_type "group", no temb):
 *   z / scaling_factor + shift_factor
 *   -> post_quant_conv (1x1, when used)
 *   -> decoder.conv_in (3x3, Cl -> block_out[n-1])
 *   -> decoder.mid_block: resnets.0, attentions.0, resnets.1
 *   -> decoder.up_blocks.0 .. n-1 over reversed(block_out): block i has
 *      layers_per_block + 1 resnets (the first maps the previous block's
 *      channels to this block's), then, except for the last block,
 *      upsamplers.0 = nearest 2x + 3x3 conv
 *   -> decoder.conv_norm_out (GroupNorm) -> SiLU -> decoder.conv_out (3x3, -> 3)
 * ResnetBlock2D: h = conv1(silu(norm1(x))); h = conv2(silu(norm2(h)));
 *   out = shortcut(x) + h, shortcut = conv_shortcut (1x1) when in != out, else x.
 * Mid attention (Attention, residual_connection, one head of dim C over the
 *   H*W tokens): x + to_out.0(softmax(q k^T / sqrt(C)) v), q/k/v = to_q/k/v of
 *   group_norm(x) seen as (HW, C) tokens.
 * Every GroupNorm has eps 1e-6 and cfg->groups groups.
 *
 * Synthetic init rules (rp_vae_param_specs; rp_param_init_values draws them):
 *   conv and linear weights  RP_INIT_FANIN       scale 1    (std 1/sqrt(fan_in))
 *   conv and linear biases   RP_INIT_NORMAL      scale 0.02
 *   norm weights             RP_INIT_ONE_NORMAL  scale 0.1  (1 + N(0, 0.1))
 *   norm biases              RP_INIT_NORMAL      scale 0.1
 * FANIN keeps each layer's output at about its input's scale, so a random
 * decoder's output stays O(1) and parity tolerances mean the same at any size.
 *
 * Memory: images are decoded one at a time (B never multiplies activation
 * memory). Per call: three activation buffers of the largest C*H*W any stage
 * holds, plus mid-attention scratch of 5 * C*h*w; rp_conv2d adds an im2col block
 * (4 MB, or one output row's 9 * IC * W if larger) while it runs. On a device (engine/device.h) these
 * are device memory, plus one item's latent and image (the input uploaded and
 * the output downloaded item by item), and the parameters are read through
 * their mirror; without one every rp_d_* call is the CPU op (same bits).
 *
 * Not traced: the trace names in trace.h are the transformer's; the decoder runs
 * once after sampling, outside the model evaluations the classifier compares. */
#include "vae.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attention/attention.h"
#include "../device.h"
#include "../ops.h"

#define VAE_EPS 1e-6f
#define VAE_MAX_RESNETS 8 /* layers_per_block + 1 resnets per up block */

/* ---- presets -------------------------------------------------------------- */

/* The 4-level AutoencoderKL decoder shape every preset shares; the real VAEs
 * (sd-vae, sd3-vae, flux-vae) have the same block widths, the tiny ones narrower blocks. */
static void preset_shape(rp_vae_config *cfg, int c0, int c1, int c2, int c3, int layers, int groups) {
    cfg->n_levels = 4;
    cfg->block_out[0] = c0; cfg->block_out[1] = c1; cfg->block_out[2] = c2; cfg->block_out[3] = c3;
    cfg->layers_per_block = layers;
    cfg->groups = groups;
}

rp_status rp_vae_preset(const char *name, rp_vae_config *cfg, rp_error *err) {
    memset(cfg, 0, sizeof *cfg);
    if (!strcmp(name, "vae-tiny")) {
        /* CI size: same structure as sd-vae, 16x16 latent -> 128x128 in well under a second */
        preset_shape(cfg, 32, 32, 64, 64, 1, 8);
        cfg->latent_channels = 4;
        cfg->use_post_quant_conv = 1;
        cfg->scaling_factor = 0.18215f;
        cfg->shift_factor = 0.0f;
    } else if (!strcmp(name, "vae-digits")) {
        /* trained (tests/reference/train/train_digits.py, weights shipped in engine/models/digits/): two levels
         * of 16 and 32 channels, 4x8x8 latents <-> 16x16 images; scaling_factor = 1 / the std
         * of the training latents, as the training script computed and stored in the file's
         * metadata (the parity test checks the two agree) */
        cfg->n_levels = 2;
        cfg->block_out[0] = 16; cfg->block_out[1] = 32;
        cfg->layers_per_block = 1;
        cfg->groups = 8;
        cfg->latent_channels = 4;
        cfg->use_post_quant_conv = 1;
        cfg->scaling_factor = 1.026f;
        cfg->shift_factor = 0.0f;
    } else if (!strcmp(name, "sd-vae")) {
        /* stabilityai/sd-vae-ft-ema (the DiT / SD 1.x VAE) */
        preset_shape(cfg, 128, 256, 512, 512, 2, 32);
        cfg->latent_channels = 4;
        cfg->use_post_quant_conv = 1;
        cfg->scaling_factor = 0.18215f;
        cfg->shift_factor = 0.0f;
    } else if (!strcmp(name, "vae-tiny-16")) {
        /* CI size for the 16-channel families (sd3-tiny, flux-tiny): vae-tiny's blocks with
         * the SD3 VAE's latent interface (16 channels, no post_quant_conv, SD3's factors) */
        preset_shape(cfg, 32, 32, 64, 64, 1, 8);
        cfg->latent_channels = 16;
        cfg->use_post_quant_conv = 0;
        cfg->scaling_factor = 1.5305f;
        cfg->shift_factor = 0.0609f;
    } else if (!strcmp(name, "vae-mini") || !strcmp(name, "vae-mini-16")) {
        /* the classifier's test sets (tests/classify/): the decoder's whole structure (conv_in,
         * the mid block and its attention, up blocks of resnets with an upsampler, GroupNorm,
         * conv_out) at two levels, 16x16 latents -> 32x32 images, decoding 14x faster than
         * vae-tiny (4 dit-tiny items: 0.030 against 0.415 s on a 2-core AMD EPYC): an image fault
         * shows in any decoder, and vae-tiny's 128x128 decode was most of those sets' run time.
         * vae-mini has vae-tiny's latent interface, vae-mini-16 vae-tiny-16's. */
        const int c16 = !strcmp(name, "vae-mini-16");
        cfg->n_levels = 2;
        cfg->block_out[0] = 16; cfg->block_out[1] = 32;
        cfg->layers_per_block = 1;
        cfg->groups = 8;
        cfg->latent_channels = c16 ? 16 : 4;
        cfg->use_post_quant_conv = !c16;
        cfg->scaling_factor = c16 ? 1.5305f : 0.18215f;
        cfg->shift_factor = c16 ? 0.0609f : 0.0f;
    } else if (!strcmp(name, "sd3-vae")) {
        /* stabilityai/stable-diffusion-3-medium-diffusers vae/config.json:
         * use_post_quant_conv false, scaling_factor 1.5305, shift_factor 0.0609 */
        preset_shape(cfg, 128, 256, 512, 512, 2, 32);
        cfg->latent_channels = 16;
        cfg->use_post_quant_conv = 0;
        cfg->scaling_factor = 1.5305f;
        cfg->shift_factor = 0.0609f;
    } else if (!strcmp(name, "flux-vae")) {
        /* black-forest-labs/FLUX.1-dev vae/config.json: the SD3 shapes, scaling_factor
         * 0.3611, shift_factor 0.1159 */
        preset_shape(cfg, 128, 256, 512, 512, 2, 32);
        cfg->latent_channels = 16;
        cfg->use_post_quant_conv = 0;
        cfg->scaling_factor = 0.3611f;
        cfg->shift_factor = 0.1159f;
    } else {
        return RP_FAIL(err, RP_ERR_NOT_FOUND,
                       "unknown VAE preset '%s' (known: vae-tiny vae-mini vae-digits sd-vae vae-tiny-16 vae-mini-16 "
                       "sd3-vae flux-vae)", name);
    }
    snprintf(cfg->preset, sizeof cfg->preset, "%s", name);
    return RP_OK;
}

int rp_vae_scale_factor(const rp_vae_config *cfg) { return 1 << (cfg->n_levels - 1); }

/* Checks what the code below relies on; a hand-built cfg may break it. */
static rp_status check_config(const rp_vae_config *cfg, rp_error *err) {
    if (cfg->n_levels < 1 || cfg->n_levels > RP_VAE_MAX_LEVELS)
        return RP_FAIL(err, RP_ERR_INVALID, "VAE '%s': n_levels %d not in [1, %d]", cfg->preset,
                       cfg->n_levels, RP_VAE_MAX_LEVELS);
    if (cfg->layers_per_block < 0 || cfg->layers_per_block + 1 > VAE_MAX_RESNETS)
        return RP_FAIL(err, RP_ERR_INVALID, "VAE '%s': layers_per_block %d not in [0, %d]", cfg->preset,
                       cfg->layers_per_block, VAE_MAX_RESNETS - 1);
    if (cfg->latent_channels < 1 || cfg->groups < 1)
        return RP_FAIL(err, RP_ERR_INVALID, "VAE '%s': latent_channels %d and groups %d must be >= 1",
                       cfg->preset, cfg->latent_channels, cfg->groups);
    if (!(cfg->scaling_factor != 0.0f) || !isfinite(cfg->scaling_factor) || !isfinite(cfg->shift_factor))
        return RP_FAIL(err, RP_ERR_INVALID, "VAE '%s': scaling_factor %g / shift_factor %g unusable",
                       cfg->preset, cfg->scaling_factor, cfg->shift_factor);
    for (int i = 0; i < cfg->n_levels; i++)
        if (cfg->block_out[i] < 1 || cfg->block_out[i] % cfg->groups)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "VAE '%s': block_out[%d] = %d is not a positive multiple of groups (%d)",
                           cfg->preset, i, cfg->block_out[i], cfg->groups);
    return RP_OK;
}

/* ---- parameter specs ---------------------------------------------------------- */

/* name.weight (OC, IC, k, k) + name.bias (OC) */
static void spec_conv(rp_param_list *l, const char *name, int OC, int IC, int k) {
    int64_t ws[4] = {OC, IC, k, k}, bs[1] = {OC};
    rp_params_add(l, RP_INIT_FANIN, 1.0f, 4, ws, "%s.weight", name);
    rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, bs, "%s.bias", name);
}

/* name.weight (out, in) + name.bias (out) — nn.Linear */
static void spec_linear(rp_param_list *l, const char *name, int out, int in) {
    int64_t ws[2] = {out, in}, bs[1] = {out};
    rp_params_add(l, RP_INIT_FANIN, 1.0f, 2, ws, "%s.weight", name);
    rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, bs, "%s.bias", name);
}

/* name.weight (C) + name.bias (C) — GroupNorm affine */
static void spec_norm(rp_param_list *l, const char *name, int C) {
    int64_t s[1] = {C};
    rp_params_add(l, RP_INIT_ONE_NORMAL, 0.1f, 1, s, "%s.weight", name);
    rp_params_add(l, RP_INIT_NORMAL, 0.1f, 1, s, "%s.bias", name);
}

/* ResnetBlock2D prefix.{norm1, conv1, norm2, conv2[, conv_shortcut when in != out]} */
static void spec_resnet(rp_param_list *l, const char *prefix, int in, int out) {
    char n[112];
    snprintf(n, sizeof n, "%s.norm1", prefix); spec_norm(l, n, in);
    snprintf(n, sizeof n, "%s.conv1", prefix); spec_conv(l, n, out, in, 3);
    snprintf(n, sizeof n, "%s.norm2", prefix); spec_norm(l, n, out);
    snprintf(n, sizeof n, "%s.conv2", prefix); spec_conv(l, n, out, out, 3);
    if (in != out) { snprintf(n, sizeof n, "%s.conv_shortcut", prefix); spec_conv(l, n, out, in, 1); }
}

/* Channels of up block i: in = previous block's out (the mid's for i = 0). */
static int up_in(const rp_vae_config *cfg, int i) { return cfg->block_out[cfg->n_levels - (i > 0 ? i : 1)]; }
static int up_out(const rp_vae_config *cfg, int i) { return cfg->block_out[cfg->n_levels - 1 - i]; }

void rp_vae_param_specs(const rp_vae_config *cfg, rp_param_list *l) {
    const int Cl = cfg->latent_channels, Cm = cfg->block_out[cfg->n_levels - 1];
    char n[112];
    if (cfg->use_post_quant_conv) spec_conv(l, "post_quant_conv", Cl, Cl, 1);
    spec_conv(l, "decoder.conv_in", Cm, Cl, 3);
    spec_resnet(l, "decoder.mid_block.resnets.0", Cm, Cm);
    spec_norm(l, "decoder.mid_block.attentions.0.group_norm", Cm);
    spec_linear(l, "decoder.mid_block.attentions.0.to_q", Cm, Cm);
    spec_linear(l, "decoder.mid_block.attentions.0.to_k", Cm, Cm);
    spec_linear(l, "decoder.mid_block.attentions.0.to_v", Cm, Cm);
    spec_linear(l, "decoder.mid_block.attentions.0.to_out.0", Cm, Cm);
    spec_resnet(l, "decoder.mid_block.resnets.1", Cm, Cm);
    for (int i = 0; i < cfg->n_levels; i++) {
        int in = up_in(cfg, i), out = up_out(cfg, i);
        for (int j = 0; j <= cfg->layers_per_block; j++) {
            snprintf(n, sizeof n, "decoder.up_blocks.%d.resnets.%d", i, j);
            spec_resnet(l, n, j == 0 ? in : out, out);
        }
        if (i < cfg->n_levels - 1) {
            snprintf(n, sizeof n, "decoder.up_blocks.%d.upsamplers.0.conv", i);
            spec_conv(l, n, out, out, 3);
        }
    }
    spec_norm(l, "decoder.conv_norm_out", cfg->block_out[0]);
    spec_conv(l, "decoder.conv_out", 3, cfg->block_out[0], 3);
}

/* ---- the model -------------------------------------------------------------- */

typedef struct vae_conv { const float *w, *b; int in, out, k; } vae_conv; /* w (out, in, k, k), b (out) */
typedef struct vae_norm { const float *w, *b; } vae_norm;                 /* w, b (C) */

typedef struct vae_resnet {
    int in, out;
    vae_norm norm1, norm2;          /* (in), (out) */
    vae_conv conv1, conv2;          /* 3x3 in -> out, out -> out */
    vae_conv shortcut;              /* 1x1 in -> out; w NULL when in == out */
} vae_resnet;

typedef struct vae_attn {
    int C;
    vae_norm gn;                    /* (C) */
    rp_linear_w q, k, v, o;         /* (C, C) + (C) each */
} vae_attn;

typedef struct vae_up {
    int in, out, n_res;
    vae_resnet res[VAE_MAX_RESNETS];
    vae_conv up;                    /* 3x3 out -> out after nearest 2x; w NULL in the last block */
} vae_up;

struct rp_vae {
    rp_vae_config cfg;
    float *block;                   /* every parameter, one allocation */
    size_t n_block;                 /* floats in block (what a device mirrors) */
    vae_conv post_quant;            /* 1x1 Cl -> Cl; w NULL when unused */
    vae_conv conv_in;               /* 3x3 Cl -> Cm */
    vae_resnet mid_res[2];          /* Cm -> Cm */
    vae_attn mid_attn;              /* C = Cm */
    vae_up up[RP_VAE_MAX_LEVELS];
    vae_norm norm_out;              /* (block_out[0]) */
    vae_conv conv_out;              /* 3x3 block_out[0] -> 3 */
};

/* Pointer to the loaded parameter named by fmt. The names come from our own
 * spec list, so a miss is a programming error, not a bad file. */
static const float *param(const rp_param_list *l, float *const *ptrs, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const float *param(const rp_param_list *l, float *const *ptrs, const char *fmt, ...) {
    char name[112];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->specs[i].name, name)) return ptrs[i];
    assert(!"VAE parameter missing from its own spec list");
    return NULL;
}

/* bind_*: views of loaded parameters by name, with the shapes spec_* gave them. */
static vae_conv bind_conv(const rp_param_list *l, float *const *ptrs, const char *name, int in, int out, int k) {
    vae_conv c = {param(l, ptrs, "%s.weight", name), param(l, ptrs, "%s.bias", name), in, out, k};
    return c;
}

static vae_norm bind_norm(const rp_param_list *l, float *const *ptrs, const char *name) {
    vae_norm n = {param(l, ptrs, "%s.weight", name), param(l, ptrs, "%s.bias", name)};
    return n;
}

static rp_linear_w bind_linear(const rp_param_list *l, float *const *ptrs, const char *name, int C) {
    rp_linear_w w = {param(l, ptrs, "%s.weight", name), param(l, ptrs, "%s.bias", name), C, C};
    return w;
}

static vae_resnet bind_resnet(const rp_param_list *l, float *const *ptrs, const char *prefix, int in, int out) {
    char n[112];
    vae_resnet r;
    memset(&r, 0, sizeof r);
    r.in = in;
    r.out = out;
    snprintf(n, sizeof n, "%s.norm1", prefix); r.norm1 = bind_norm(l, ptrs, n);
    snprintf(n, sizeof n, "%s.conv1", prefix); r.conv1 = bind_conv(l, ptrs, n, in, out, 3);
    snprintf(n, sizeof n, "%s.norm2", prefix); r.norm2 = bind_norm(l, ptrs, n);
    snprintf(n, sizeof n, "%s.conv2", prefix); r.conv2 = bind_conv(l, ptrs, n, out, out, 3);
    if (in != out) {
        snprintf(n, sizeof n, "%s.conv_shortcut", prefix);
        r.shortcut = bind_conv(l, ptrs, n, in, out, 1);
    }
    return r;
}

rp_status rp_vae_load(const rp_vae_config *cfg, const rp_st_file *f, rp_vae **out, rp_error *err) {
    RP_TRY(check_config(cfg, err));
    rp_param_list l = {0};
    rp_vae_param_specs(cfg, &l);
    float **ptrs = calloc((size_t)l.n, sizeof *ptrs);
    rp_vae *m = calloc(1, sizeof *m);
    if (!ptrs || !m) {
        free(ptrs);
        free(m);
        rp_params_free(&l);
        return RP_FAIL(err, RP_ERR_NOMEM, "VAE '%s': out of memory", cfg->preset);
    }
    rp_status s = rp_params_load(&l, f, &m->block, ptrs, err);
    if (s != RP_OK) {
        free(ptrs);
        free(m);
        rp_params_free(&l);
        return s;
    }
    m->n_block = rp_params_total(&l);
    m->cfg = *cfg;
    const int Cl = cfg->latent_channels, Cm = cfg->block_out[cfg->n_levels - 1];
    char n[112];
    if (cfg->use_post_quant_conv) m->post_quant = bind_conv(&l, ptrs, "post_quant_conv", Cl, Cl, 1);
    m->conv_in = bind_conv(&l, ptrs, "decoder.conv_in", Cl, Cm, 3);
    m->mid_res[0] = bind_resnet(&l, ptrs, "decoder.mid_block.resnets.0", Cm, Cm);
    m->mid_res[1] = bind_resnet(&l, ptrs, "decoder.mid_block.resnets.1", Cm, Cm);
    m->mid_attn.C = Cm;
    m->mid_attn.gn = bind_norm(&l, ptrs, "decoder.mid_block.attentions.0.group_norm");
    m->mid_attn.q = bind_linear(&l, ptrs, "decoder.mid_block.attentions.0.to_q", Cm);
    m->mid_attn.k = bind_linear(&l, ptrs, "decoder.mid_block.attentions.0.to_k", Cm);
    m->mid_attn.v = bind_linear(&l, ptrs, "decoder.mid_block.attentions.0.to_v", Cm);
    m->mid_attn.o = bind_linear(&l, ptrs, "decoder.mid_block.attentions.0.to_out.0", Cm);
    for (int i = 0; i < cfg->n_levels; i++) {
        vae_up *u = &m->up[i];
        u->in = up_in(cfg, i);
        u->out = up_out(cfg, i);
        u->n_res = cfg->layers_per_block + 1;
        for (int j = 0; j < u->n_res; j++) {
            snprintf(n, sizeof n, "decoder.up_blocks.%d.resnets.%d", i, j);
            u->res[j] = bind_resnet(&l, ptrs, n, j == 0 ? u->in : u->out, u->out);
        }
        if (i < cfg->n_levels - 1) {
            snprintf(n, sizeof n, "decoder.up_blocks.%d.upsamplers.0.conv", i);
            u->up = bind_conv(&l, ptrs, n, u->out, u->out, 3);
        }
    }
    m->norm_out = bind_norm(&l, ptrs, "decoder.conv_norm_out");
    m->conv_out = bind_conv(&l, ptrs, "decoder.conv_out", cfg->block_out[0], 3, 3);
    free(ptrs);
    rp_params_free(&l);
    *out = m;
    return RP_OK;
}

void rp_vae_free(rp_vae *m) {
    if (!m) return;
    free(m->block);
    free(m);
}

/* ---- forward ------------------------------------------------------------------ */

/* out (c->out, H, W) = conv(in (c->in, H, W)); 'same' padding (k/2), stride 1. */
static void conv_fwd(const rp_ctx *ctx, const vae_conv *c, float *out, const float *in, int H, int W) {
    assert(c->w && c->b);
    rp_d_conv2d(ctx, out, in, c->w, c->b, 1, c->in, H, W, c->out, c->k, 1, c->k / 2);
}

/* out (C, HW) = silu(groupnorm(x (C, HW))); out may alias x. */
static void norm_silu(const rp_ctx *ctx, const vae_norm *n, float *out, const float *x, int C, int HW, int G) {
    rp_d_groupnorm(ctx, out, x, n->w, n->b, 1, C, HW, G, VAE_EPS);
    rp_d_silu(ctx, out, out, (size_t)C * HW);
}

static void swap_buf(float **a, float **b) { float *t = *a; *a = *b; *b = t; }

/* ResnetBlock2D on one image. *x (r->in, H, W) -> *x (r->out, H, W); the three
 * buffers each hold max(in, out) * H * W floats and may be exchanged. */
static void resnet_fwd(const rp_ctx *ctx, const vae_resnet *r, int G, float **x, float **t, float **h,
                       int H, int W) {
    const int HW = H * W;
    norm_silu(ctx, &r->norm1, *t, *x, r->in, HW, G);           /* t (in, HW) */
    conv_fwd(ctx, &r->conv1, *h, *t, H, W);               /* h (out, HW) */
    norm_silu(ctx, &r->norm2, *t, *h, r->out, HW, G);          /* t (out, HW) */
    conv_fwd(ctx, &r->conv2, *h, *t, H, W);               /* h (out, HW) */
    if (r->shortcut.w) {
        conv_fwd(ctx, &r->shortcut, *t, *x, H, W);        /* t (out, HW) = shortcut(x) */
        rp_d_add(ctx, *t, *h, (size_t)r->out * HW);              /* t = shortcut(x) + h */
        swap_buf(x, t);
    } else {
        rp_d_add(ctx, *x, *h, (size_t)r->out * HW);              /* x = x + h */
    }
}

/* Mid-block attention on one image, in place: x (C, T) += proj of attention over
 * the T = H*W tokens. s holds 5 * C * T floats. */
static rp_status attn_fwd(const rp_ctx *ctx, const vae_attn *a, int G, float *x, float *s, int T,
                          rp_error *err) {
    const int C = a->C;
    const size_t n = (size_t)C * T;
    float *tok = s;            /* (T, C) normalised tokens, later the projected output */
    float *q = s + n;          /* (T, C) = (B=1, H=1, T, D=C) */
    float *k = s + 2 * n;      /* (T, C) */
    float *v = s + 3 * n;      /* (T, C) */
    float *o = s + 4 * n;      /* (T, C) attention output; first (C, T) group-norm scratch */
    rp_d_groupnorm(ctx, o, x, a->gn.w, a->gn.b, 1, C, T, G, VAE_EPS); /* o (C, T) */
    rp_d_transpose(ctx, tok, o, C, T);                               /* tok (T, C) = o^T */
    rp_d_linear(ctx, q, tok, &a->q, T);
    rp_d_linear(ctx, k, tok, &a->k, T);
    rp_d_linear(ctx, v, tok, &a->v, T);
    /* diffusers: one head with dim_head = C, scale dim_head^-0.5 (on a device a
     * failure is the device's sticky error, reported by rp_vae_decode's rp_d_check) */
    RP_TRY(rp_d_attention(ctx, o, q, k, v, NULL, 1, 1, T, T, C, 1.0f / sqrtf((float)C), err));
    rp_d_linear(ctx, tok, o, &a->o, T);                              /* tok (T, C) */
    rp_d_add_transposed(ctx, x, tok, C, T);                          /* residual: x (C, T) += tok^T */
    return RP_OK;
}

/* Largest C*H*W (floats) any activation of one image holds, latent (h, w). */
static size_t max_act(const rp_vae_config *cfg, int h, int w) {
    size_t HW = (size_t)h * w, best = (size_t)cfg->latent_channels * HW;
    size_t Cm = (size_t)cfg->block_out[cfg->n_levels - 1];
    if (Cm * HW > best) best = Cm * HW;
    for (int i = 0; i < cfg->n_levels; i++) {
        size_t in = (size_t)up_in(cfg, i), out = (size_t)up_out(cfg, i);
        if (in * HW > best) best = in * HW;
        if (out * HW > best) best = out * HW;
        if (i < cfg->n_levels - 1) {
            HW *= 4;                          /* the upsampled map, before its conv */
            if (out * HW > best) best = out * HW;
        }
    }
    return best;
}

rp_status rp_vae_decode(const rp_vae *m, const rp_ctx *ctx, float *img, const float *z,
                        int B, int h, int w, rp_error *err) {
    const rp_vae_config *cfg = &m->cfg;
    const int f = rp_vae_scale_factor(cfg), G = cfg->groups;
    const int Cl = cfg->latent_channels, Cm = cfg->block_out[cfg->n_levels - 1];
    if (B < 1 || h < 1 || w < 1)
        return RP_FAIL(err, RP_ERR_SHAPE, "VAE '%s': latents (%d, %d, %d, %d) must be non-empty",
                       cfg->preset, B, Cl, h, w);
    /* rp_conv2d indexes one image's pixels with int */
    if ((int64_t)h * f * w * f > INT_MAX / 16)
        return RP_FAIL(err, RP_ERR_SHAPE, "VAE '%s': latent %dx%d decodes to %dx%d, too large",
                       cfg->preset, h, w, h * f, w * f);
    const size_t E = max_act(cfg, h, w);
    const size_t S = (size_t)5 * Cm * h * w;
    const size_t n_z = (size_t)Cl * h * w;                  /* one item's latent */
    const size_t n_img = (size_t)3 * (h * f) * (w * f);     /* one item's image */
    const size_t n_total = 3 * E + S + (ctx->dev ? n_z + n_img : 0);
    /* On a device every buffer below is device memory and the parameters are read
     * through their mirror; without one this is the CPU path. */
    RP_TRY(rp_d_mirror(ctx, m->block, m->n_block * sizeof(float), err));
    float *mem = rp_d_alloc(ctx, n_total, err);
    if (!mem) {
        rp_d_check(ctx, NULL); /* clears the device's record of the failure */
        return RP_FAIL(err, RP_ERR_NOMEM, "VAE '%s': out of memory for %zu MB of activations at latent %dx%d",
                       cfg->preset, n_total * sizeof(float) >> 20, h, w);
    }
    float *bx = mem;                     /* (C, H, W) current activation, C, H, W per stage */
    float *bt = bx + E;                  /* (C, H, W) scratch */
    float *bh = bt + E;                  /* (C, H, W) scratch */
    float *sa = bh + E;                  /* 5 x (h*w, Cm) mid-attention scratch */
    float *zd = ctx->dev ? sa + S : NULL;        /* (Cl, h, w) the item's latent, on a device */
    float *od = ctx->dev ? zd + n_z : NULL;      /* (3, H, W) the item's image, on a device */
    rp_status st = RP_OK;
    for (int b = 0; b < B && st == RP_OK; b++) {
        const float *zb = z + (size_t)b * n_z;                  /* (Cl, h, w) */
        float *ib = img + (size_t)b * n_img;                    /* (3, h*f, w*f) */
        float *x = bx, *t = bt, *u = bh;
        int H = h, W = w;
        if (ctx->dev) {
            rp_d_upload(ctx, zd, zb, n_z);
            zb = zd;
        }
        /* StableDiffusion3Pipeline / FluxPipeline: latents = latents / scaling_factor +
         * shift_factor (SD and DiT: shift 0, so x + 0 leaves the quotient's bits).
         * A true division, as torch's CPU kernel does it (not a reciprocal multiply),
         * then the float32 add: two roundings, in that order. */
        rp_d_div_add(ctx, x, zb, cfg->scaling_factor, cfg->shift_factor, n_z); /* x (Cl, h, w) */
        if (m->post_quant.w) {
            conv_fwd(ctx, &m->post_quant, t, x, H, W);          /* t (Cl, h, w) */
            swap_buf(&x, &t);
        }
        conv_fwd(ctx, &m->conv_in, t, x, H, W);                 /* t (Cm, h, w) */
        swap_buf(&x, &t);
        resnet_fwd(ctx, &m->mid_res[0], G, &x, &t, &u, H, W);  /* x (Cm, h, w) */
        st = attn_fwd(ctx, &m->mid_attn, G, x, sa, H * W, err); /* x (Cm, h, w) */
        if (st != RP_OK) break;
        resnet_fwd(ctx, &m->mid_res[1], G, &x, &t, &u, H, W);  /* x (Cm, h, w) */
        for (int i = 0; i < cfg->n_levels; i++) {
            const vae_up *up = &m->up[i];
            for (int j = 0; j < up->n_res; j++)
                resnet_fwd(ctx, &up->res[j], G, &x, &t, &u, H, W); /* x (up->out, H, W) */
            if (up->up.w) {
                rp_d_upsample_nearest2x(ctx, t, x, 1, up->out, H, W); /* t (out, 2H, 2W) */
                H *= 2;
                W *= 2;
                conv_fwd(ctx, &up->up, x, t, H, W);             /* x (out, H, W) */
            }
        }
        assert(H == h * f && W == w * f);
        norm_silu(ctx, &m->norm_out, t, x, cfg->block_out[0], H * W, G); /* t (block_out[0], H, W) */
        conv_fwd(ctx, &m->conv_out, ctx->dev ? od : ib, t, H, W);         /* img[b] (3, H, W) */
        if (ctx->dev) rp_d_download(ctx, ib, od, n_img);
    }
    {
        rp_status dst = rp_d_check(ctx, st == RP_OK ? err : NULL); /* the device's first error */
        if (st == RP_OK) st = dst;
    }
    rp_d_free(ctx, mem);
    return st;
}

/* ---- to 8-bit ------------------------------------------------------------------ */

/* Exact rule, all in float32 (the Python reference repeats it op for op):
 *   t = (x + 1) * 0.5;  t = min(max(t, 0), 1)   (NaN -> 0: fmaxf returns the number)
 *   s = t * 255;        byte = roundf(s)         (half away from zero; s >= 0, so
 *                                                 floor(s + 0.5) computed exactly) */
void rp_image_to_rgb8(uint8_t *rgb, const float *img, int B, int H, int W) {
    rp_image_to_rgb8_cast(rgb, img, B, H, W, 0);
}

void rp_image_to_rgb8_cast(uint8_t *rgb, const float *img, int B, int H, int W, int truncate) {
    const size_t HW = (size_t)H * W;
    for (int b = 0; b < B; b++) {
        const float *ib = img + (size_t)b * 3 * HW;   /* (3, H, W) */
        uint8_t *ob = rgb + (size_t)b * HW * 3;       /* (H, W, 3) */
        for (int c = 0; c < 3; c++)
            for (size_t p = 0; p < HW; p++) {
                float t = (ib[(size_t)c * HW + p] + 1.0f) * 0.5f;
                t = fminf(fmaxf(t, 0.0f), 1.0f);
                ob[p * 3 + c] = (uint8_t)(truncate ? t * 255.0f : roundf(t * 255.0f));
            }
    }
}
