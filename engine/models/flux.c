/* flux.c — FLUX.1 transformer forward (diffusers FluxTransformer2DModel) over plain float buffers.
 *
 * Structure, as diffusers:
 *   pack          x (B, Cin, H, W) -> (B, N, 4Cin), N = (H/2)(W/2), (c, py, px) per token
 *   x_embedder    Linear(4Cin, C) on image tokens; context_embedder Linear(Dctx, C) on text
 *   temb          timestep_embedder(sincos256(1000 t)) [+ guidance_embedder(sincos256(1000 g))]
 *                 + text_embedder(pooled); sincos = [cos, sin], f_i = 10000^(-i/128) (fp32);
 *                 TimestepEmbedding / text projection = linear_2(silu(linear_1(.)))
 *   rope          ids: text (0, 0, 0); image (0, row, col) on the (H/2, W/2) grid. Per axis a
 *                 of width d_a: f_j = 1 / theta^(2j / d_a), angle = pos_a * f_j in float64,
 *                 cos/sin rounded to float and repeated per pair; for each pair (x0, x1):
 *                 y0 = x0 cos - x1 sin, y1 = x1 cos + x0 sin (each product rounded, then summed)
 *   double block  per stream s (text: norm1_context / add_*_proj / to_add_out / ff_context,
 *                 image: norm1 / to_* / to_out.0 / ff):
 *                   mod_s = linear(silu(temb)) -> shift_msa, scale_msa, gate_msa,
 *                                                 shift_mlp, scale_mlp, gate_mlp
 *                   h_s = LN(x_s) (1 + scale_msa) + shift_msa
 *                   q, k = RMSNorm_per_head(proj(h_s)), v = proj(h_s)
 *                 joint attention over [text, image] tokens (text FIRST), RoPE on q and k,
 *                 softmax(q k^T / sqrt(D)) v; split back per stream, out projections;
 *                   x_s += gate_msa * attn_s
 *                   x_s += gate_mlp * ff_s(LN(x_s) (1 + scale_mlp) + shift_mlp)
 *                   ff = net.2(gelu_tanh(net.0.proj(.)))
 *   single block  over the joint stream [text, image]:
 *                   mod = norm.linear(silu(temb)) -> shift, scale, gate
 *                   h = LN(x) (1 + scale) + shift
 *                   a = attention as above (to_q/k/v, norm_q/k, RoPE; no out projection)
 *                   x += gate * proj_out(cat[a, gelu_tanh(proj_mlp(h))])
 *   norm_out      (scale, shift) = linear(silu(temb)); LN(x_img) (1 + scale) + shift
 *   proj_out      Linear(C, 4Cin), then unpack to (B, Cin, H, W)
 * LayerNorms: eps 1e-6, no affine. RMSNorm: eps 1e-6, weight (D).
 *
 * Layout: the residual stream xs is (B, T, C), T = L + N, each item's L text tokens
 * first then its N image tokens — the order diffusers concatenates them in before the
 * single blocks — so the single blocks need no copy and the double blocks address
 * each stream as a row range of an item.
 *
 * Synthetic init rules (rp_flux_param_specs; they drive `repro weights` and the
 * weights cache, so a change here needs RP_SYNTHETIC_INIT_VERSION bumped):
 *   linear weights                      RP_INIT_FANIN  scale 1   (unit-variance outputs)
 *   every bias                          RP_INIT_NORMAL 0.02
 *   norm1.linear, norm1_context.linear, RP_INIT_FANIN  scale 0.2 — upstream zero-inits the
 *   norm.linear, norm_out.linear        adaLN modulation in training; non-zero keeps every
 *                                       block visible to the tests, gates ~0.1
 *   RMSNorm weights (norm_q, norm_k,    RP_INIT_ONE_NORMAL 0.1 (near identity, not exactly)
 *   norm_added_q, norm_added_k)
 *
 * Sequence parallelism (ctx->par, engine/parallel/parallel.h): x_embedder and
 * context_embedder run on every token, then this rank keeps its slices of the text
 * ([l0, l0 + Ll); all of it under patch parallelism and pipefusion) and image
 * ([n0, n0 + Nl)) tokens, in the same per-item order
 * [text_local; image_local]; RoPE uses each token's global position; the blocks run on
 * the Ll + Nl local rows with rp_par_attention; proj_out's image tokens are gathered
 * before unpacking. Without ctx->par, Ll = L, Nl = N and every call is the plain one.
 *
 * Memory: parameters live in one allocation (rp_params_load); each forward call makes
 * one activation allocation holding one block's working set (reused block after block)
 * and frees it before returning. On a device (ctx->dev, engine/device.h) that allocation
 * is device memory that also holds the uploaded inputs and the output, the parameters are
 * read through their device mirror, and every activation moves through rp_d_* ops; the
 * host only builds the RoPE tables, joint key mask and scaled timesteps (uploaded) and
 * reads traced tensors through rp_d_host_view. Without a device every rp_d_* call is the
 * CPU op: the plain path, bit for bit. */
#include "flux.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attention/attention.h"
#include "../device.h"
#include "../ops.h"
#include "../parallel/parallel.h"
#include "../trace.h"
#include "embed.h"
#include "family_ops.h"

/* One stream's weights of a double block: [0] text (…_context, add_*), [1] image. */
typedef struct flux_stream_w {
    rp_linear_w mod;              /* norm1(_context).linear (6C, C) */
    rp_linear_w q, k, v;          /* to_q / add_q_proj ... (C, C) */
    const float *norm_q, *norm_k; /* (D) */
    rp_linear_w out;              /* to_out.0 / to_add_out (C, C) */
    rp_linear_w ff0;              /* ff(_context).net.0.proj (M, C) */
    rp_linear_w ff2;              /* ff(_context).net.2 (C, M) */
} flux_stream_w;

typedef struct flux_double {
    flux_stream_w s[2]; /* [0] text, [1] image */
} flux_double;

typedef struct flux_single {
    rp_linear_w mod;              /* norm.linear (3C, C) */
    rp_linear_w proj_mlp;         /* (M, C) */
    rp_linear_w proj_out;         /* (C, C + M) */
    const float *norm_q, *norm_k; /* (D) */
    rp_linear_w q, k, v;          /* (C, C) */
} flux_single;

struct rp_flux {
    rp_flux_config cfg;
    float *params;         /* every parameter, one allocation */
    size_t n_params;       /* floats in params (the block a device mirrors) */
    rp_linear_w t_lin1;    /* time_text_embed.timestep_embedder.linear_1 (C, 256) */
    rp_linear_w t_lin2;    /* (C, C) */
    rp_linear_w g_lin1;    /* guidance_embedder.linear_1 (C, 256); weight NULL without guidance */
    rp_linear_w g_lin2;    /* (C, C) */
    rp_linear_w p_lin1;    /* text_embedder.linear_1 (C, Dpool) */
    rp_linear_w p_lin2;    /* (C, C) */
    rp_linear_w ctx_embed; /* context_embedder (C, Dctx) */
    rp_linear_w x_embed;   /* x_embedder (C, 4Cin) */
    flux_double *doubles;  /* (n_double) */
    flux_single *singles;  /* (n_single) */
    rp_linear_w norm_out;  /* (2C, C) */
    rp_linear_w proj_out;  /* (4Cin, C) */
};

/* ---- presets ---------------------------------------------------------------- */

typedef struct flux_preset {
    const char *name;
    int sample_size, text_len, heads, head_dim, n_double, n_single;
    int axes[3];
    int joint_attention_dim, pooled_dim, guidance_embeds;
} flux_preset;

static const flux_preset PRESETS[] = {
    /* CI-sized; the same code path as dev */
    {"flux-tiny", 16, 16, 2, 32, 2, 2, {8, 12, 12}, 64, 64, 1},
    /* FLUX.1-dev (black-forest-labs/FLUX.1-dev transformer/config.json); 1024 px nominal */
    {"flux-dev", 128, 512, 24, 128, 19, 38, {16, 56, 56}, 4096, 768, 1},
    /* FLUX.1-schnell: dev's shapes without the guidance embedder (guidance_embeds false;
     * timestep-distilled, sampled on the unshifted schedule, rp_flow_schedule_linear) */
    {"flux-schnell", 128, 256, 24, 128, 19, 38, {16, 56, 56}, 4096, 768, 0},
    {"flux-tiny-schnell", 16, 16, 2, 32, 2, 2, {8, 12, 12}, 64, 64, 0},
};

rp_status rp_flux_preset(const char *name, rp_flux_config *cfg, rp_error *err) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof *PRESETS; i++) {
        const flux_preset *p = &PRESETS[i];
        if (strcmp(name, p->name) != 0) continue;
        memset(cfg, 0, sizeof *cfg);
        snprintf(cfg->preset, sizeof cfg->preset, "%s", p->name);
        cfg->in_channels = 16;
        cfg->sample_size = p->sample_size;
        cfg->text_len = p->text_len;
        cfg->heads = p->heads;
        cfg->head_dim = p->head_dim;
        cfg->hidden = p->heads * p->head_dim;
        cfg->n_double = p->n_double;
        cfg->n_single = p->n_single;
        memcpy(cfg->axes_dims, p->axes, sizeof cfg->axes_dims);
        cfg->rope_theta = 10000;
        cfg->joint_attention_dim = p->joint_attention_dim;
        cfg->pooled_dim = p->pooled_dim;
        cfg->guidance_embeds = p->guidance_embeds;
        cfg->mlp_ratio = 4;
        cfg->freq_dim = 256;
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown FLUX preset '%s' (known: flux-tiny flux-dev flux-schnell flux-tiny-schnell)", name);
}

rp_status rp_flux_set_depth(rp_flux_config *cfg, int n_double, int n_single, rp_error *err) {
    if (n_double > cfg->n_double || n_single > cfg->n_single)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "FLUX '%s': depth %d double + %d single exceeds the model's %d + %d blocks",
                       cfg->preset, n_double, n_single, cfg->n_double, cfg->n_single);
    if (n_double >= 0) cfg->n_double = n_double;
    if (n_single >= 0) cfg->n_single = n_single;
    return RP_OK;
}

/* Rejects configs the forward cannot run (a hand-edited or overridden preset). */
static rp_status check_cfg(const rp_flux_config *cfg, rp_error *err) {
    if (cfg->heads <= 0 || cfg->head_dim <= 0 || cfg->hidden != cfg->heads * cfg->head_dim)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': hidden %d must equal heads %d x head_dim %d",
                       cfg->preset, cfg->hidden, cfg->heads, cfg->head_dim);
    int sum = 0;
    for (int a = 0; a < 3; a++) {
        if (cfg->axes_dims[a] < 0 || cfg->axes_dims[a] % 2 != 0)
            return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': RoPE axes_dims[%d] = %d must be even and >= 0",
                           cfg->preset, a, cfg->axes_dims[a]);
        sum += cfg->axes_dims[a];
    }
    if (sum != cfg->head_dim)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': RoPE axes_dims {%d, %d, %d} sum to %d, head_dim is %d",
                       cfg->preset, cfg->axes_dims[0], cfg->axes_dims[1], cfg->axes_dims[2], sum,
                       cfg->head_dim);
    if (cfg->n_double < 0 || cfg->n_single < 0 || cfg->in_channels <= 0 || cfg->mlp_ratio <= 0 ||
        cfg->joint_attention_dim <= 0 || cfg->pooled_dim <= 0 || cfg->freq_dim <= 1 || cfg->rope_theta <= 0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "FLUX '%s': n_double %d, n_single %d must be >= 0 and in_channels %d, mlp_ratio %d, "
                       "joint_attention_dim %d, pooled_dim %d, rope_theta %d > 0, freq_dim %d > 1",
                       cfg->preset, cfg->n_double, cfg->n_single, cfg->in_channels, cfg->mlp_ratio,
                       cfg->joint_attention_dim, cfg->pooled_dim, cfg->rope_theta, cfg->freq_dim);
    return RP_OK;
}

/* ---- parameter specs (diffusers state_dict order) -------------------------------- */

/* The sub-names of a double block's two streams, in the order the forward indexes them. */
static const char *const MOD_NAME[2] = {"norm1_context.linear", "norm1.linear"};
static const char *const Q_NAME[2] = {"attn.add_q_proj", "attn.to_q"};
static const char *const K_NAME[2] = {"attn.add_k_proj", "attn.to_k"};
static const char *const V_NAME[2] = {"attn.add_v_proj", "attn.to_v"};
static const char *const NQ_NAME[2] = {"attn.norm_added_q", "attn.norm_q"};
static const char *const NK_NAME[2] = {"attn.norm_added_k", "attn.norm_k"};
static const char *const OUT_NAME[2] = {"attn.to_add_out", "attn.to_out.0"};
static const char *const FF0_NAME[2] = {"ff_context.net.0.proj", "ff.net.0.proj"};
static const char *const FF2_NAME[2] = {"ff_context.net.2", "ff.net.2"};

void rp_flux_param_specs(const rp_flux_config *cfg, rp_param_list *l) {
    const int64_t C = cfg->hidden, D = cfg->head_dim, M = (int64_t)cfg->mlp_ratio * C;
    const int64_t P = 4 * (int64_t)cfg->in_channels;
    char pre[112];
    rp_params_add_linear(l, "time_text_embed.timestep_embedder.linear_1", C, cfg->freq_dim, 1.0f);
    rp_params_add_linear(l, "time_text_embed.timestep_embedder.linear_2", C, C, 1.0f);
    if (cfg->guidance_embeds) {
        rp_params_add_linear(l, "time_text_embed.guidance_embedder.linear_1", C, cfg->freq_dim, 1.0f);
        rp_params_add_linear(l, "time_text_embed.guidance_embedder.linear_2", C, C, 1.0f);
    }
    rp_params_add_linear(l, "time_text_embed.text_embedder.linear_1", C, cfg->pooled_dim, 1.0f);
    rp_params_add_linear(l, "time_text_embed.text_embedder.linear_2", C, C, 1.0f);
    rp_params_add_linear(l, "context_embedder", C, cfg->joint_attention_dim, 1.0f);
    rp_params_add_linear(l, "x_embedder", C, P, 1.0f);
    /* diffusers' Attention registers norm_q/k, to_q/k/v, add_k/v/q_proj, to_out,
     * to_add_out, norm_added_q/k in that order; the block: norm1, norm1_context,
     * attn, ff, ff_context. */
    for (int i = 0; i < cfg->n_double; i++) {
#define DB(name) (snprintf(pre, sizeof pre, "transformer_blocks.%d.%s", i, (name)), pre)
        rp_params_add_linear(l, DB(MOD_NAME[1]), 6 * C, C, 0.2f);
        rp_params_add_linear(l, DB(MOD_NAME[0]), 6 * C, C, 0.2f);
        rp_params_add_norm(l, DB(NQ_NAME[1]), D);
        rp_params_add_norm(l, DB(NK_NAME[1]), D);
        rp_params_add_linear(l, DB(Q_NAME[1]), C, C, 1.0f);
        rp_params_add_linear(l, DB(K_NAME[1]), C, C, 1.0f);
        rp_params_add_linear(l, DB(V_NAME[1]), C, C, 1.0f);
        rp_params_add_linear(l, DB(K_NAME[0]), C, C, 1.0f);
        rp_params_add_linear(l, DB(V_NAME[0]), C, C, 1.0f);
        rp_params_add_linear(l, DB(Q_NAME[0]), C, C, 1.0f);
        rp_params_add_linear(l, DB(OUT_NAME[1]), C, C, 1.0f);
        rp_params_add_linear(l, DB(OUT_NAME[0]), C, C, 1.0f);
        rp_params_add_norm(l, DB(NQ_NAME[0]), D);
        rp_params_add_norm(l, DB(NK_NAME[0]), D);
        rp_params_add_linear(l, DB(FF0_NAME[1]), M, C, 1.0f);
        rp_params_add_linear(l, DB(FF2_NAME[1]), C, M, 1.0f);
        rp_params_add_linear(l, DB(FF0_NAME[0]), M, C, 1.0f);
        rp_params_add_linear(l, DB(FF2_NAME[0]), C, M, 1.0f);
#undef DB
    }
    for (int i = 0; i < cfg->n_single; i++) {
#define SB(name) (snprintf(pre, sizeof pre, "single_transformer_blocks.%d.%s", i, (name)), pre)
        rp_params_add_linear(l, SB("norm.linear"), 3 * C, C, 0.2f);
        rp_params_add_linear(l, SB("proj_mlp"), M, C, 1.0f);
        rp_params_add_linear(l, SB("proj_out"), C, C + M, 1.0f);
        rp_params_add_norm(l, SB("attn.norm_q"), D);
        rp_params_add_norm(l, SB("attn.norm_k"), D);
        rp_params_add_linear(l, SB("attn.to_q"), C, C, 1.0f);
        rp_params_add_linear(l, SB("attn.to_k"), C, C, 1.0f);
        rp_params_add_linear(l, SB("attn.to_v"), C, C, 1.0f);
#undef SB
    }
    rp_params_add_linear(l, "norm_out.linear", 2 * C, C, 0.2f);
    rp_params_add_linear(l, "proj_out", P, C, 1.0f);
}

/* ---- loading -------------------------------------------------------------------- */

rp_status rp_flux_load(const rp_flux_config *cfg, const rp_st_file *f, rp_flux **out, rp_error *err) {
    RP_TRY(check_cfg(cfg, err));
    const int C = cfg->hidden, M = cfg->mlp_ratio * cfg->hidden, P = 4 * cfg->in_channels;
    rp_flux *m = calloc(1, sizeof *m);
    /* +1: calloc(0) may return NULL, which would read as a failure */
    if (!m || !(m->doubles = calloc((size_t)cfg->n_double + 1, sizeof *m->doubles)) ||
        !(m->singles = calloc((size_t)cfg->n_single + 1, sizeof *m->singles))) {
        rp_flux_free(m);
        return RP_FAIL(err, RP_ERR_NOMEM, "FLUX '%s': out of memory for the model description", cfg->preset);
    }
    m->cfg = *cfg;
    rp_param_cursor c = {.prefix = ""};
    rp_flux_param_specs(cfg, &c.l);
    rp_status st = rp_param_cursor_load(&c, f, &m->params, &m->n_params, err);
    if (st != RP_OK) {
        rp_flux_free(m);
        return st;
    }
    char pre[112];
    m->t_lin1 = rp_param_take_linear(&c, "time_text_embed.timestep_embedder.linear_1", cfg->freq_dim, C);
    m->t_lin2 = rp_param_take_linear(&c, "time_text_embed.timestep_embedder.linear_2", C, C);
    if (cfg->guidance_embeds) {
        m->g_lin1 = rp_param_take_linear(&c, "time_text_embed.guidance_embedder.linear_1", cfg->freq_dim, C);
        m->g_lin2 = rp_param_take_linear(&c, "time_text_embed.guidance_embedder.linear_2", C, C);
    }
    m->p_lin1 = rp_param_take_linear(&c, "time_text_embed.text_embedder.linear_1", cfg->pooled_dim, C);
    m->p_lin2 = rp_param_take_linear(&c, "time_text_embed.text_embedder.linear_2", C, C);
    m->ctx_embed = rp_param_take_linear(&c, "context_embedder", cfg->joint_attention_dim, C);
    m->x_embed = rp_param_take_linear(&c, "x_embedder", P, C);
    for (int i = 0; i < cfg->n_double; i++) {
        flux_stream_w *tx = &m->doubles[i].s[0], *im = &m->doubles[i].s[1];
#define DB(name) (snprintf(pre, sizeof pre, "transformer_blocks.%d.%s", i, (name)), pre)
        im->mod = rp_param_take_linear(&c, DB(MOD_NAME[1]), C, 6 * C);
        tx->mod = rp_param_take_linear(&c, DB(MOD_NAME[0]), C, 6 * C);
        im->norm_q = rp_param_take_weight(&c, DB(NQ_NAME[1]));
        im->norm_k = rp_param_take_weight(&c, DB(NK_NAME[1]));
        im->q = rp_param_take_linear(&c, DB(Q_NAME[1]), C, C);
        im->k = rp_param_take_linear(&c, DB(K_NAME[1]), C, C);
        im->v = rp_param_take_linear(&c, DB(V_NAME[1]), C, C);
        tx->k = rp_param_take_linear(&c, DB(K_NAME[0]), C, C);
        tx->v = rp_param_take_linear(&c, DB(V_NAME[0]), C, C);
        tx->q = rp_param_take_linear(&c, DB(Q_NAME[0]), C, C);
        im->out = rp_param_take_linear(&c, DB(OUT_NAME[1]), C, C);
        tx->out = rp_param_take_linear(&c, DB(OUT_NAME[0]), C, C);
        tx->norm_q = rp_param_take_weight(&c, DB(NQ_NAME[0]));
        tx->norm_k = rp_param_take_weight(&c, DB(NK_NAME[0]));
        im->ff0 = rp_param_take_linear(&c, DB(FF0_NAME[1]), C, M);
        im->ff2 = rp_param_take_linear(&c, DB(FF2_NAME[1]), M, C);
        tx->ff0 = rp_param_take_linear(&c, DB(FF0_NAME[0]), C, M);
        tx->ff2 = rp_param_take_linear(&c, DB(FF2_NAME[0]), M, C);
#undef DB
    }
    for (int i = 0; i < cfg->n_single; i++) {
        flux_single *b = &m->singles[i];
#define SB(name) (snprintf(pre, sizeof pre, "single_transformer_blocks.%d.%s", i, (name)), pre)
        b->mod = rp_param_take_linear(&c, SB("norm.linear"), C, 3 * C);
        b->proj_mlp = rp_param_take_linear(&c, SB("proj_mlp"), C, M);
        b->proj_out = rp_param_take_linear(&c, SB("proj_out"), C + M, C);
        b->norm_q = rp_param_take_weight(&c, SB("attn.norm_q"));
        b->norm_k = rp_param_take_weight(&c, SB("attn.norm_k"));
        b->q = rp_param_take_linear(&c, SB("attn.to_q"), C, C);
        b->k = rp_param_take_linear(&c, SB("attn.to_k"), C, C);
        b->v = rp_param_take_linear(&c, SB("attn.to_v"), C, C);
#undef SB
    }
    m->norm_out = rp_param_take_linear(&c, "norm_out.linear", C, 2 * C);
    m->proj_out = rp_param_take_linear(&c, "proj_out", C, P);
    rp_param_cursor_end(&c);
    *out = m;
    return RP_OK;
}

void rp_flux_free(rp_flux *m) {
    if (!m) return;
    free(m->params);
    free(m->doubles);
    free(m->singles);
    free(m);
}

const rp_flux_config *rp_flux_cfg(const rp_flux *m) { return &m->cfg; }

/* ---- packing ----------------------------------------------------------------------- */

/* ---- forward helpers ------------------------------------------------------------------ */

/* cos, sin (L + Ni, D): FluxPosEmbed of the ids [text (0,0,0) x L; image (0, r, c) of
 * image tokens n0 .. n0 + Ni - 1 of the gh x gw grid, row-major], as diffusers computes
 * them on CPU: frequencies and angles in float64, cos/sin rounded once to float, each
 * repeated for its pair. shift (the rope-offset fault; else 0) gives image token g the
 * position of token (g + shift) mod gh gw. Host memory (uploaded on a device). */
static void build_rope(float *cosb, float *sinb, const rp_flux_config *cfg, int L, int n0, int Ni, int gh, int gw,
                       int shift) {
    const int D = cfg->head_dim, T = L + Ni;
    for (int t = 0; t < T; t++) {
        double pos[3] = {0.0, 0.0, 0.0};
        if (t >= L) {
            const int g = (n0 + t - L + shift) % (gh * gw);
            pos[1] = (double)(g / gw);
            pos[2] = (double)(g % gw);
        }
        float *cr = cosb + (size_t)t * D, *sr = sinb + (size_t)t * D;
        int off = 0;
        for (int a = 0; a < 3; a++) {
            const int d = cfg->axes_dims[a];
            for (int j = 0; j < d / 2; j++) {
                double freq = 1.0 / pow((double)cfg->rope_theta, (double)(2 * j) / (double)d);
                double ang = pos[a] * freq;
                float c = (float)cos(ang), s = (float)sin(ang);
                cr[off + 2 * j] = cr[off + 2 * j + 1] = c;
                sr[off + 2 * j] = sr[off + 2 * j + 1] = s;
            }
            off += d;
        }
        assert(off == D);
    }
}

/* The own check of this rank's RoPE tables (cosb, sinb: (L + Ni, D), as build_rope made
 * them for its text tokens and image tokens n0 .. n0 + Ni - 1): the single process's rows at
 * those tokens' global positions, recomputed from the positions by code of its own (the
 * frequencies per axis first, then each row; the same float64 operations), held as an own
 * pair under "pos_embed" (FluxPosEmbed). A table is a function of position alone, so a
 * shard's rows built from a wrong offset, order or precision differ here whatever the
 * arithmetic (audit 15: the last sequence rank's table one token late in bf16 cases was
 * x39.8 against bf16's attention envelope, drift). No-op without the own checks. */
static rp_status rope_own_check(const rp_ctx *ctx, const float *cosb, const float *sinb, const rp_flux_config *cfg,
                                int L, int n0, int Ni, int gw, rp_error *err) {
    if (!ctx->par || !ctx->par->check_own) return RP_OK;
    const int D = cfg->head_dim, T = L + Ni;
    float *yc = malloc(sizeof(float) * 2 * (size_t)T * D), *ys = yc ? yc + (size_t)T * D : NULL;
    double *freq = malloc(sizeof(double) * (size_t)D);
    if (!yc || !freq) {
        free(yc), free(freq);
        return RP_FAIL(err, RP_ERR_NOMEM, "RoPE own check: out of memory (%d x %d)", T, D);
    }
    for (int a = 0, off = 0; a < 3; off += cfg->axes_dims[a], a++)
        for (int j = 0; j < cfg->axes_dims[a] / 2; j++)
            freq[off / 2 + j] = 1.0 / pow((double)cfg->rope_theta, (double)(2 * j) / (double)cfg->axes_dims[a]);
    for (int t = 0; t < T; t++) {
        const int g = t < L ? -1 : n0 + (t - L); /* the token's global image index; text: -1 */
        const double pos[3] = {0.0, g < 0 ? 0.0 : (double)(g / gw), g < 0 ? 0.0 : (double)(g % gw)};
        for (int a = 0, off = 0; a < 3; off += cfg->axes_dims[a], a++)
            for (int j = 0; j < cfg->axes_dims[a] / 2; j++) {
                const double ang = pos[a] * freq[off / 2 + j];
                const size_t e = (size_t)t * D + off + 2 * j;
                yc[e] = yc[e + 1] = (float)cos(ang);
                ys[e] = ys[e + 1] = (float)sin(ang);
            }
    }
    rp_par_own_hold(ctx->par, cosb, yc, (size_t)T * D, "RoPE table");
    rp_par_own_hold(ctx->par, sinb, ys, (size_t)T * D, "RoPE table");
    rp_par_own_flush(ctx, "pos_embed");
    free(yc), free(freq);
    return RP_OK;
}

/* Sizes of the activation allocation, shared by the forward and rp_flux_activation_bytes. */
typedef struct flux_dims {
    int N, T, C, M, P, F;
    size_t n_shared; /* floats of the region shared by q, k, v and the MLP hidden / cat */
    size_t n_mask;   /* floats reserved for the (B, T) uint8 joint key mask */
    size_t n_total;  /* floats, without a device */
    size_t n_io;     /* floats a device adds: the uploaded x, context, pooled and the output */
} flux_dims;

static flux_dims dims_of(const rp_flux_config *cfg, int B, int H, int W, int L, int with_mask) {
    flux_dims d;
    d.N = (H / 2) * (W / 2);
    d.T = L + d.N;
    d.C = cfg->hidden;
    d.M = cfg->mlp_ratio * cfg->hidden;
    d.P = 4 * cfg->in_channels;
    d.F = cfg->freq_dim;
    const size_t BT = (size_t)B * d.T, C = (size_t)d.C;
    /* q, k, v (3 x (B, T, C)) are dead once attention has run, when the double
     * block's FF hidden (B, T, M) or the single block's cat (B, T, C + M) is filled,
     * so they share one region. */
    const size_t w = 3 * C > C + (size_t)d.M ? 3 * C : C + (size_t)d.M;
    d.n_shared = BT * w;
    d.n_mask = with_mask ? (BT + sizeof(float) - 1) / sizeof(float) : 0;
    d.n_total = (size_t)B * d.N * d.P       /* tok */
                + 4 * BT * C                /* xs, h, ys, att */
                + d.n_shared                /* q, k, v | mh | cat */
                + 2 * (size_t)d.T * cfg->head_dim /* rope cos, sin */
                + d.n_mask                  /* joint key mask */
                + (size_t)B * d.F           /* tfreq */
                + 2 * (size_t)B             /* tsc, gsc */
                + 4 * (size_t)B * C         /* e1, temb, tmp, stemb */
                + 2 * (size_t)B * 6 * C;    /* mod[0], mod[1] */
    d.n_io = 2 * (size_t)B * cfg->in_channels * H * W  /* x, out */
             + (size_t)B * L * cfg->joint_attention_dim /* context */
             + (size_t)B * cfg->pooled_dim;             /* pooled */
    return d;
}

size_t rp_flux_activation_bytes(const rp_flux_config *cfg, int B, int H, int W, int L, int with_mask) {
    return dims_of(cfg, B, H, W, L, with_mask).n_total * sizeof(float);
}

/* ---- forward ------------------------------------------------------------------------- */

/* One forward's state: its sizes, this rank's shard of the sequence and the activation
 * buffers (device memory on a device), shared by the block functions below. */
typedef struct flux_fwd {
    int B, N, T, C, M, P, F, NH, D, L;
    int l0, Ll, n0, Nl, Tl;       /* this rank's text [l0, l0 + Ll) and image [n0, n0 + Nl) tokens */
    int n_s[2], off_s[2];         /* tokens per item of stream s ([0] text, [1] image), first row in an item */
    size_t BTl;                   /* B * Tl: the rows of the residual stream */
    float scale;                  /* attention: 1 / sqrt(head_dim), SDPA's default */
    float mlp_ln_eps;             /* the image stream's norm2 eps (norm-eps-rank: 1e-5 on one rank) */
    const int *gtok, *itok;       /* trace token maps: joint index (Tl), image index (Nl); NULL single rank */
    float *tok;                   /* (B, N, 4Cin) packed input, later packed output */
    float *xs;                    /* (B, Tl, C) residual stream, [text; image] per item */
    float *h;                     /* (B, T, C) normed + modulated input of a branch */
    float *ys;                    /* (B, T, C) projection scratch / branch output */
    float *att;                   /* (B, NH, T, D) attention output */
    float *q, *k, *v;             /* (B, NH, T, D) each; share one region with mh / cat */
    float *mh;                    /* (B, T, M) double-block FF hidden */
    float *cat;                   /* (B, T, C + M) single block [attn, mlp] */
    float *cosb, *sinb;           /* (Tl, D) RoPE of this rank's tokens */
    const uint8_t *jmask;         /* (B, T) joint key mask, or NULL */
    float *stemb;                 /* (B, C) silu(temb): the input of every adaLN */
    float *mod[2];                /* (B, 6C) each: the text / image stream's modulation */
} flux_fwd;

/* time_text_embed: timestep_embedder(1000 t) [+ guidance_embedder(1000 g)] +
 * text_embedder(pooled) into temb (B, C); tsc, gsc (B) hold 1000 t, 1000 g. */
static void flux_time_text_embed(const rp_flux *m, const rp_ctx *ctx, const flux_fwd *f, float *temb,
                                 const float *tsc, const float *gsc, const float *pooled, float *tfreq, float *e1,
                                 float *tmp) {
    const int B = f->B, C = f->C, F = f->F;
    rp_timestep_embedder(ctx, temb, e1, tfreq, tsc, B, F, &m->t_lin1, &m->t_lin2);
    if (m->cfg.guidance_embeds) {
        rp_timestep_embedder(ctx, tmp, e1, tfreq, gsc, B, F, &m->g_lin1, &m->g_lin2);
        rp_d_add(ctx, temb, tmp, (size_t)B * C);
    }
    rp_silu_mlp(ctx, tmp, e1, pooled, B, &m->p_lin1, &m->p_lin2);
    rp_d_add(ctx, temb, tmp, (size_t)B * C);
}

/* transformer_blocks.i (FluxTransformerBlock): the text and image streams, each with its
 * own adaLN, projections and feed-forward, attending jointly over [text; image]. */
static rp_status flux_double_block(const rp_flux *m, const rp_ctx *ctx, const flux_fwd *f, int i, rp_error *err) {
    const flux_double *blk = &m->doubles[i];
    const int B = f->B, C = f->C, M = f->M, NH = f->NH, D = f->D, Tl = f->Tl;
    char name[96];
    /* mod[s] (B, 6C) = [shift_msa | scale_msa | gate_msa | shift_mlp | scale_mlp | gate_mlp] */
    for (int s = 0; s < 2; s++) rp_d_linear(ctx, f->mod[s], f->stemb, &blk->s[s].mod, B);

    rp_d_layernorm(ctx, f->h, f->xs, NULL, NULL, (int)f->BTl, C, 1e-6f);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const float *ms = f->mod[s] + (size_t)b * 6 * C;
            rp_d_modulate(ctx, f->h + ((size_t)b * Tl + f->off_s[s]) * C, ms, ms + C, 6 * C, 1, f->n_s[s], C);
        }

    /* q, k, v: each stream through its own projection (and per-head RMSNorm), into
     * ys in token layout, then to heads over the joint sequence; RoPE on q and k. */
    float *dst[3] = {f->q, f->k, f->v};
    for (int j = 0; j < 3; j++) {
        for (int b = 0; b < B; b++)
            for (int s = 0; s < 2; s++) {
                if (f->n_s[s] == 0) continue;
                const flux_stream_w *w = &blk->s[s];
                const rp_linear_w *lw = j == 0 ? &w->q : j == 1 ? &w->k : &w->v;
                const float *nw = j == 0 ? w->norm_q : j == 1 ? w->norm_k : NULL;
                const size_t r0 = (size_t)b * Tl + f->off_s[s];
                rp_d_linear(ctx, f->ys + r0 * C, f->h + r0 * C, lw, f->n_s[s]);
                if (nw) rp_d_rmsnorm(ctx, f->ys + r0 * C, f->ys + r0 * C, nw, f->n_s[s] * NH, D, 1e-6f);
            }
        rp_d_to_heads(ctx, dst[j], f->ys, B, Tl, NH, D, Tl, 0);
        if (j < 2) rp_d_rope(ctx, dst[j], f->cosb, f->sinb, B, NH, Tl, D);
    }
    RP_TRY(rp_par_attention(ctx, i, f->att, f->q, f->k, f->v, f->jmask, B, NH, Tl, f->Ll, 0, D, f->scale, err));
    rp_d_from_heads(ctx, f->h, C, f->att, B, Tl, 0, Tl, NH, D); /* h (B, T, C) reused: its content is consumed */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const size_t r0 = (size_t)b * Tl + f->off_s[s];
            rp_d_linear(ctx, f->ys + r0 * C, f->h + r0 * C, &blk->s[s].out, f->n_s[s]);
        }
    snprintf(name, sizeof name, "transformer_blocks.%d.attn", i);
    rp_par_trace(ctx, name, f->ys, B, Tl, C, f->gtok, f->T);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const size_t r0 = (size_t)b * Tl + f->off_s[s];
            rp_d_gated_add(ctx, f->xs + r0 * C, f->mod[s] + (size_t)b * 6 * C + 2 * C, 6 * C, f->ys + r0 * C, 1,
                           f->n_s[s], C);
        }

    /* feed-forward, per stream: norm2 (image) and norm2_context (text) are separate
     * LayerNorms, as in diffusers (row-wise, so a call per segment gives the same bits) */
    rp_ctx mlp_tmp;
    const rp_ctx *mc = rp_par_mlp_ctx(ctx, i, &mlp_tmp); /* ctx (bf16-layer-rank: bf16 on one rank) */
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const float *ms = f->mod[s] + (size_t)b * 6 * C;
            const size_t r0 = (size_t)b * Tl + f->off_s[s];
            rp_d_layernorm(ctx, f->h + r0 * C, f->xs + r0 * C, NULL, NULL, f->n_s[s], C,
                           s == 1 ? f->mlp_ln_eps : 1e-6f);
            rp_d_modulate(ctx, f->h + r0 * C, ms + 3 * C, ms + 4 * C, 6 * C, 1, f->n_s[s], C);
            rp_d_linear(s == 1 ? mc : ctx, f->mh + r0 * M, f->h + r0 * C, &blk->s[s].ff0, f->n_s[s]);
        }
    rp_par_mlp_act_input(ctx, i, f->mh, f->BTl * M); /* act-bf16-rank */
    rp_d_gelu_tanh(ctx, f->mh, f->mh, f->BTl * M);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const size_t r0 = (size_t)b * Tl + f->off_s[s];
            rp_d_linear(s == 1 ? mc : ctx, f->ys + r0 * C, f->mh + r0 * M, &blk->s[s].ff2, f->n_s[s]);
        }
    snprintf(name, sizeof name, "transformer_blocks.%d.ff", i);
    rp_par_trace(ctx, name, f->ys, B, Tl, C, f->gtok, f->T);
    for (int b = 0; b < B; b++)
        for (int s = 0; s < 2; s++) {
            if (f->n_s[s] == 0) continue;
            const size_t r0 = (size_t)b * Tl + f->off_s[s];
            rp_d_gated_add(ctx, f->xs + r0 * C, f->mod[s] + (size_t)b * 6 * C + 5 * C, 6 * C, f->ys + r0 * C, 1,
                           f->n_s[s], C);
        }

    snprintf(name, sizeof name, "transformer_blocks.%d", i);
    rp_par_trace(ctx, name, f->xs, B, Tl, C, f->gtok, f->T);
    return RP_OK;
}

/* single_transformer_blocks.i (FluxSingleTransformerBlock), over the joint [text; image]
 * sequence: one adaLN, attention and an MLP in parallel, one output projection.
 * layer: the block's index among all blocks (the attention hooks count them so). */
static rp_status flux_single_block(const rp_flux *m, const rp_ctx *ctx, const flux_fwd *f, int i, int layer,
                                   rp_error *err) {
    const flux_single *blk = &m->singles[i];
    const int B = f->B, C = f->C, M = f->M, NH = f->NH, D = f->D, Tl = f->Tl;
    const int BTl = (int)f->BTl;
    char name[96];
    float *ms = f->mod[0]; /* (B, 3C) = [shift | scale | gate] */
    rp_d_linear(ctx, ms, f->stemb, &blk->mod, B);
    rp_d_layernorm(ctx, f->h, f->xs, NULL, NULL, BTl, C, 1e-6f);
    rp_d_modulate(ctx, f->h, ms, ms + C, 3 * C, B, Tl, C);

    const rp_linear_w *lw[3] = {&blk->q, &blk->k, &blk->v};
    const float *nw[3] = {blk->norm_q, blk->norm_k, NULL};
    float *dst[3] = {f->q, f->k, f->v};
    for (int j = 0; j < 3; j++) {
        rp_d_linear(ctx, f->ys, f->h, lw[j], BTl);
        if (nw[j]) rp_d_rmsnorm(ctx, f->ys, f->ys, nw[j], BTl * NH, D, 1e-6f);
        rp_d_to_heads(ctx, dst[j], f->ys, B, Tl, NH, D, Tl, 0);
        if (j < 2) rp_d_rope(ctx, dst[j], f->cosb, f->sinb, B, NH, Tl, D);
    }
    RP_TRY(rp_par_attention(ctx, layer, f->att, f->q, f->k, f->v, f->jmask, B, NH, Tl, f->Ll, 0, D, f->scale, err));
    /* cat (B, T, C + M) = [attn | gelu(proj_mlp(h))]; it overwrites q, k, v (dead now) */
    rp_d_from_heads(ctx, f->cat, C + M, f->att, B, Tl, 0, Tl, NH, D);
    rp_d_linear_ld(ctx, f->cat + C, C + M, f->h, &blk->proj_mlp, BTl);
    rp_d_act_2d(ctx, RP_D_GELU_TANH, f->cat + C, C + M, f->cat + C, C + M, BTl, M);
    rp_d_linear(ctx, f->ys, f->cat, &blk->proj_out, BTl);
    snprintf(name, sizeof name, "single_transformer_blocks.%d.proj_out", i);
    rp_par_trace(ctx, name, f->ys, B, Tl, C, f->gtok, f->T);
    rp_d_gated_add(ctx, f->xs, ms + 2 * C, 3 * C, f->ys, B, Tl, C);
    snprintf(name, sizeof name, "single_transformer_blocks.%d", i);
    rp_par_trace(ctx, name, f->xs, B, Tl, C, f->gtok, f->T);
    return RP_OK;
}

/* norm_out (AdaLayerNormContinuous): mod (B, 2C) = [scale | shift], image tokens only,
 * into h as contiguous (B, Nl, C); then proj_out into tok (B, N, P), gathered over the
 * sequence group. */
static rp_status flux_final(const rp_flux *m, const rp_ctx *ctx, const flux_fwd *f, rp_error *err) {
    const int B = f->B, C = f->C, Nl = f->Nl;
    rp_d_linear(ctx, f->mod[0], f->stemb, &m->norm_out, B);
    for (int b = 0; b < B; b++)
        rp_d_layernorm(ctx, f->h + (size_t)b * Nl * C, f->xs + ((size_t)b * f->Tl + f->Ll) * C, NULL, NULL, Nl, C,
                       1e-6f);
    rp_d_modulate(ctx, f->h, f->mod[0] + C, f->mod[0], 2 * C, B, Nl, C);
    rp_par_trace(ctx, "norm_out", f->h, B, Nl, C, f->itok, f->N);
    rp_d_linear(ctx, f->tok, f->h, &m->proj_out, B * Nl);
    if (Nl < f->N) RP_TRY(rp_par_gather_tokens(ctx, f->tok, f->tok, B, f->N, f->P, f->n0, Nl, err));
    rp_par_trace(ctx, "proj_out", f->tok, B, f->N, f->P, NULL, f->N);
    return RP_OK;
}

rp_status rp_flux_forward(const rp_flux *m, const rp_ctx *ctx, float *out, const float *x,
                          const float *t, const float *guidance, const float *context,
                          const uint8_t *mask, const float *pooled, int B, int H, int W, int L,
                          rp_error *err) {
    assert(m && ctx && out && x && t);
    const rp_flux_config *cfg = &m->cfg;
    if (B <= 0) return RP_FAIL(err, RP_ERR_INVALID, "FLUX forward: batch %d must be > 0", B);
    if (H <= 0 || W <= 0 || H % 2 || W % 2)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX forward: latent %d x %d must be positive and even (2x2 packing)",
                       H, W);
    if (L < 0 || (L > 0 && !context))
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX forward: %d text tokens but context is %s", L,
                       context ? "given" : "NULL");
    if (!pooled) return RP_FAIL(err, RP_ERR_INVALID, "FLUX forward: pooled text embedding is NULL");
    if (cfg->guidance_embeds && !guidance)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX forward: '%s' has a guidance embedder but guidance is NULL",
                       cfg->preset);

    const flux_dims dm = dims_of(cfg, B, H, W, L, mask != NULL);
    flux_fwd f = {.B = B, .N = dm.N, .T = dm.T, .C = dm.C, .M = dm.M, .P = dm.P, .F = dm.F, .NH = cfg->heads,
                  .D = cfg->head_dim, .L = L};
    const int N = f.N, T = f.T, C = f.C, F = f.F, D = f.D, Cin = cfg->in_channels, gw = W / 2;
    const int Dctx = cfg->joint_attention_dim, Dpool = cfg->pooled_dim;
    /* this rank's text tokens [l0, l0 + Ll) and image tokens [n0, n0 + Nl) (sequence
     * parallelism; else all), kept per item as [text; image], Tl rows */
    RP_TRY(rp_par_shard_text(ctx, L, &f.l0, &f.Ll, err)); /* whole under patch / pipefusion */
    RP_TRY(rp_par_shard(ctx, N, &f.n0, &f.Nl, err));
    const int Ll = f.Ll, Nl = f.Nl, l0 = f.l0, n0 = f.n0, Tl = f.Tl = Ll + Nl;
    const size_t BT = (size_t)B * T, BTl = f.BTl = (size_t)B * Tl;
    f.n_s[0] = Ll, f.n_s[1] = Nl;
    f.off_s[0] = 0, f.off_s[1] = Ll;

    /* On a device (engine/device.h) every buffer below is device memory, the inputs and
     * the output have their own rows at the end of the block, and the parameters are
     * read through their mirror; without one this is the CPU path. What is computed on
     * the host (RoPE tables, joint key mask, scaled timesteps) is built in host scratch
     * then and uploaded. */
    const size_t n_total = dm.n_total + (ctx->dev ? dm.n_io : 0);
    const size_t n_host = ctx->dev ? 2 * (size_t)Tl * D + dm.n_mask + 2 * (size_t)B : 0;
    RP_TRY(rp_d_mirror(ctx, m->params, m->n_params * sizeof(float), err));
    float *mem = rp_d_alloc(ctx, n_total, err);
    float *hs = n_host ? calloc(n_host, sizeof(float)) : NULL; /* host scratch (device only) */
    /* trace token maps: gtok (Tl) index in the joint [text; image] sequence of T, itok (Nl)
     * index among the N image tokens */
    int *gtok = ctx->par ? malloc(sizeof(int) * (Tl + Nl + 1)) : NULL, *itok = gtok ? gtok + Tl : NULL;
    if (!mem || (ctx->par && !gtok) || (n_host && !hs)) {
        rp_d_free(ctx, mem);
        free(hs);
        free(gtok);
        rp_d_check(ctx, NULL);
        return RP_FAIL(err, RP_ERR_NOMEM,
                       "FLUX forward: cannot allocate %.1f MiB of activations for batch %d, %dx%d latent, %d text tokens",
                       n_total * sizeof(float) / 1048576.0, B, H, W, L);
    }
    for (int j = 0; gtok && j < Tl; j++) gtok[j] = j < Ll ? l0 + j : L + n0 + (j - Ll);
    for (int j = 0; itok && j < Nl; j++) itok[j] = n0 + j;
    f.gtok = gtok;
    f.itok = itok;
    float *cur = mem;
    f.tok = cur;         cur += (size_t)B * N * f.P; /* (B, N, 4Cin) */
    f.xs = cur;          cur += BT * C;              /* (B, T, C); the residual stream (B, Tl, C) */
    f.h = cur;           cur += BT * C;              /* (B, T, C) */
    f.ys = cur;          cur += BT * C;              /* (B, T, C) */
    f.att = cur;         cur += BT * C;              /* (B, NH, T, D) */
    float *shared = cur; cur += dm.n_shared;
    f.q = shared;                                    /* (B, NH, T, D) */
    f.k = shared + BT * C;                           /* (B, NH, T, D) */
    f.v = shared + 2 * BT * C;                       /* (B, NH, T, D) */
    f.mh = shared;                                   /* (B, T, M) */
    f.cat = shared;                                  /* (B, T, C + M) */
    f.cosb = cur;        cur += (size_t)T * D;       /* (Tl, D) used: this rank's tokens */
    f.sinb = cur;        cur += (size_t)T * D;       /* (Tl, D) used */
    float *jmaskf = cur; cur += dm.n_mask;           /* (B, T) uint8 joint key mask */
    f.jmask = mask ? (const uint8_t *)jmaskf : NULL;
    float *tfreq = cur;  cur += (size_t)B * F;       /* (B, F) sinusoidal embedding */
    float *tsc = cur;    cur += B;                   /* (B) 1000 t */
    float *gsc = cur;    cur += B;                   /* (B) 1000 guidance */
    float *e1 = cur;     cur += (size_t)B * C;       /* (B, C) embedder hidden */
    float *temb = cur;   cur += (size_t)B * C;       /* (B, C) conditioning */
    float *tmp = cur;    cur += (size_t)B * C;       /* (B, C) */
    f.stemb = cur;       cur += (size_t)B * C;       /* (B, C) silu(temb) */
    f.mod[0] = cur;      cur += (size_t)B * 6 * C;   /* (B, 6C) text stream / single (B, 3C) / final (B, 2C) */
    f.mod[1] = cur;      cur += (size_t)B * 6 * C;   /* (B, 6C) image stream */
    assert((size_t)(cur - mem) == dm.n_total);
    /* the inputs where the ops read them, the output where unpacking writes it */
    const float *xin = x, *ctxin = context, *poolin = pooled;
    float *outd = out;
    /* where the host builds the RoPE tables, joint mask and scaled timesteps */
    float *hcos = f.cosb, *hsin = f.sinb, *hmask = jmaskf, *htsc = tsc, *hgsc = gsc;
    if (ctx->dev) {
        float *xd = cur;   cur += (size_t)B * Cin * H * W;
        outd = cur;        cur += (size_t)B * Cin * H * W;
        float *cd = cur;   cur += (size_t)B * L * Dctx;
        float *pd = cur;   cur += (size_t)B * Dpool;
        assert((size_t)(cur - mem) == n_total);
        rp_d_upload(ctx, xd, x, (size_t)B * Cin * H * W);
        if (L > 0) rp_d_upload(ctx, cd, context, (size_t)B * L * Dctx);
        rp_d_upload(ctx, pd, pooled, (size_t)B * Dpool);
        xin = xd;
        ctxin = cd;
        poolin = pd;
        float *hc = hs;
        hcos = hc;  hc += (size_t)Tl * D;
        hsin = hc;  hc += (size_t)Tl * D;
        hmask = hc; hc += dm.n_mask;
        htsc = hc;  hc += B;
        hgsc = hc;  hc += B;
        assert((size_t)(hc - hs) == n_host);
    }

    /* Host-built inputs: the x1000 of time_text_embed happens in float, as diffusers'
     * `timestep.to(dtype) * 1000`; RoPE tables for this rank's tokens; the joint key mask. */
    for (int b = 0; b < B; b++) htsc[b] = t[b] * 1000.0f;
    if (cfg->guidance_embeds)
        for (int b = 0; b < B; b++) hgsc[b] = guidance[b] * 1000.0f;
    build_rope(hcos, hsin, cfg, Ll, n0, Nl, H / 2, gw, rp_par_pos_shift(ctx));
    if (mask) {
        uint8_t *hm = (uint8_t *)hmask;
        for (int b = 0; b < B; b++)
            for (int j = 0; j < T; j++) hm[(size_t)b * T + j] = j < L ? (mask[(size_t)b * L + j] != 0) : 1;
    }
    if (ctx->dev) {
        rp_d_upload(ctx, tsc, htsc, (size_t)B);
        if (cfg->guidance_embeds) rp_d_upload(ctx, gsc, hgsc, (size_t)B);
        rp_d_upload(ctx, f.cosb, hcos, (size_t)Tl * D);
        rp_d_upload(ctx, f.sinb, hsin, (size_t)Tl * D);
        if (mask) rp_d_upload(ctx, jmaskf, hmask, dm.n_mask);
    }

    rp_status st = rope_own_check(ctx, hcos, hsin, cfg, Ll, n0, Nl, gw, err);
    f.scale = (float)(1.0 / sqrt((double)D)); /* SDPA default: 1 / sqrt(head_dim) */
    f.mlp_ln_eps = rp_par_norm_eps(ctx, 1e-6f);

    /* x_embedder on the packed latents (rp_flux_pack: rp_patchify with p = 2);
     * context_embedder on the text. Both run into h (contiguous, for the trace) and are
     * then placed in their rows of xs. */
    /* the text encoder's output as the transformer takes it (sd3.c) */
    if (L > 0) rp_par_trace(ctx, "text_encoder", ctxin, B, L, Dctx, NULL, L);
    if (pooled) rp_par_trace(ctx, "text_encoder.pooled", poolin, B, 1, Dpool, NULL, 1);
    rp_d_patchify(ctx, f.tok, xin, B, Cin, H, W, 2);
    rp_d_linear(ctx, f.h, f.tok, &m->x_embed, B * N);
    rp_par_trace(ctx, "x_embedder", f.h, B, N, C, NULL, N);
    for (int b = 0; b < B; b++)
        rp_d_copy(ctx, f.xs + ((size_t)b * Tl + Ll) * C, f.h + ((size_t)b * N + n0) * C, (size_t)Nl * C);

    flux_time_text_embed(m, ctx, &f, temb, tsc, gsc, poolin, tfreq, e1, tmp);
    rp_par_trace(ctx, "time_text_embed", temb, B, 1, C, NULL, 1);
    rp_d_silu(ctx, f.stemb, temb, (size_t)B * C);

    if (L > 0) {
        rp_d_linear(ctx, f.h, ctxin, &m->ctx_embed, B * L);
        rp_par_trace(ctx, "context_embedder", f.h, B, L, C, NULL, L);
        for (int b = 0; b < B; b++)
            rp_d_copy(ctx, f.xs + (size_t)b * Tl * C, f.h + ((size_t)b * L + l0) * C, (size_t)Ll * C);
    }

    /* the blocks this rank runs, double then single (all, unless a pipeline hook owns a range) */
    const int nd = cfg->n_double, nsg = cfg->n_single;
    int ba, bb;
    rp_par_block_range(ctx, nd + nsg, &ba, &bb);
    if (st == RP_OK) st = rp_par_stream(ctx, RP_PAR_STREAM_ENTER, ba, f.xs, BTl, NULL, 0, C, err);
    for (int i = ba; st == RP_OK && i < (bb < nd ? bb : nd); i++) st = flux_double_block(m, ctx, &f, i, err);
    for (int i = (ba > nd ? ba : nd) - nd; st == RP_OK && i < bb - nd; i++)
        st = flux_single_block(m, ctx, &f, i, nd + i, err);
    if (st == RP_OK) st = rp_par_stream(ctx, RP_PAR_STREAM_LEAVE, bb - 1, f.xs, BTl, NULL, 0, C, err);
    if (st == RP_OK && bb == nd + nsg) { /* else a later pipeline stage finishes the forward */
        st = flux_final(m, ctx, &f, err);
        if (st == RP_OK) rp_d_flux_unpack(ctx, outd, f.tok, B, Cin, H, W);
        if (st == RP_OK && ctx->dev) rp_d_download(ctx, out, outd, (size_t)B * Cin * H * W);
    }

    st = rp_par_forward_end(ctx, st, err);
    rp_d_free(ctx, mem);
    free(hs);
    free(gtok);
    return st;
}

/* ---- cost -------------------------------------------------------------------------- */

double rp_flux_macs(const rp_flux_config *cfg, int H, int W, int L) {
    const double C = cfg->hidden, M = (double)cfg->mlp_ratio * C, P = 4.0 * cfg->in_channels;
    const double N = (double)(H / 2) * (W / 2), T = N + L, F = cfg->freq_dim;
    double macs = N * P * C + (double)L * cfg->joint_attention_dim * C; /* x_ / context_embedder */
    macs += F * C + C * C;                                              /* timestep_embedder */
    if (cfg->guidance_embeds) macs += F * C + C * C;                    /* guidance_embedder */
    macs += (double)cfg->pooled_dim * C + C * C;                        /* text_embedder */
    double dbl = 2.0 * 6.0 * C * C         /* norm1, norm1_context */
                 + 3.0 * T * C * C         /* q, k, v of both streams */
                 + 2.0 * T * T * C         /* QK^T and PV over all heads */
                 + T * C * C               /* to_out.0 + to_add_out */
                 + 2.0 * T * C * M;        /* ff + ff_context */
    double sgl = 3.0 * C * C               /* norm.linear */
                 + 3.0 * T * C * C         /* q, k, v */
                 + 2.0 * T * T * C         /* attention */
                 + T * C * M               /* proj_mlp */
                 + T * (C + M) * C;        /* proj_out */
    macs += cfg->n_double * dbl + cfg->n_single * sgl;
    macs += 2.0 * C * C + N * C * P;       /* norm_out + proj_out */
    return macs;
}

/* ---- the family's ops (family_ops.h) ----------------------------------------------------- */

rp_status rp_flux_apply_depth(rp_flux_config *cfg, int depth, int single_depth, rp_error *err) {
    if (depth < 0 || single_depth < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': depth %d and single depth %d must be >= 0 (0 = default)",
                       cfg->preset, depth, single_depth);
    if (depth > cfg->n_double)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': --depth %d exceeds the preset's %d double blocks",
                       cfg->preset, depth, cfg->n_double);
    int nd = depth > 0 ? depth : -1, ns = single_depth > 0 ? single_depth : -1;
    if (depth > 0 && single_depth == 0 && cfg->n_double > 0) /* keep the preset's single:double ratio */
        ns = (2 * depth * cfg->n_single + cfg->n_double) / (2 * cfg->n_double);
    if (ns > cfg->n_single)
        return RP_FAIL(err, RP_ERR_INVALID, "FLUX '%s': --single-depth %d exceeds the preset's %d single blocks",
                       cfg->preset, ns, cfg->n_single);
    return rp_flux_set_depth(cfg, nd, ns, err);
}

static rp_status flux_config(const char *model, int depth, int single_depth, rp_flux_config *c, rp_error *err) {
    RP_TRY(rp_flux_preset(model, c, err));
    return rp_flux_apply_depth(c, depth, single_depth, err);
}

static void flux_facts_of(const rp_flux_config *c, rp_model_facts *f) {
    memset(f, 0, sizeof *f);
    f->heads = c->heads;
    f->n_double = c->n_double;
    f->n_single = c->n_single;
    f->blocks = c->n_double + c->n_single;
    f->patch = 2; /* FluxPipeline._pack_latents: one token per 2x2 latent pixels */
    f->latent_c = c->in_channels;
    f->out_c = c->in_channels;
    f->native = c->sample_size;
    f->Dctx = c->joint_attention_dim;
    f->Dpool = c->pooled_dim;
    f->guidance_embeds = c->guidance_embeds;
}

static rp_status flux_ops_specs(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err) {
    rp_flux_config c;
    RP_TRY(flux_config(model, depth, single_depth, &c, err));
    rp_flux_param_specs(&c, l);
    return RP_OK;
}

static rp_status flux_ops_facts(const char *model, int depth, int single_depth, rp_model_facts *f, rp_error *err) {
    rp_flux_config c;
    RP_TRY(flux_config(model, depth, single_depth, &c, err));
    flux_facts_of(&c, f);
    return RP_OK;
}

static rp_status flux_ops_load(const char *model, int depth, int single_depth, const rp_st_file *f, rp_model *out,
                               rp_error *err) {
    rp_flux_config c;
    RP_TRY(flux_config(model, depth, single_depth, &c, err));
    rp_flux *m = NULL;
    RP_TRY(rp_flux_load(&c, f, &m, err));
    out->impl = m;
    flux_facts_of(&c, &out->facts);
    return RP_OK;
}

/* FluxPipeline passes no text mask; the guidance only with a guidance embedder */
static rp_status flux_ops_forward(const rp_model *m, const rp_ctx *ctx, float *out, const rp_model_input *in,
                                  rp_error *err) {
    const float *g = rp_flux_cfg(m->impl)->guidance_embeds ? in->guidance : NULL;
    return rp_flux_forward(m->impl, ctx, out, in->x, in->t, g, in->context, NULL, in->pooled, in->B, in->h, in->w,
                           in->L, err);
}

static void flux_ops_free(rp_model *m) {
    rp_flux_free(m->impl);
    m->impl = NULL;
}

static double flux_ops_macs(const rp_model *m, int L, int h, int w) {
    return rp_flux_macs(rp_flux_cfg(m->impl), h, w, L);
}

/* FLUX-dev: mu from the packed image sequence length; FLUX-schnell (no guidance embedder):
 * unshifted */
static rp_status flux_ops_schedule(rp_flow_schedule *s, int steps, int h, int w, const rp_model_facts *f,
                                   rp_error *err) {
    if (!f->guidance_embeds) return rp_flow_schedule_linear(s, steps, err);
    return rp_flow_schedule_flux(s, steps, rp_flow_flux_seq_len(h, w), err);
}

const rp_family_ops rp_flux_family = {
    .family = RP_FAMILY_FLUX, .label = "FLUX",
    .presets = "flux-tiny flux-dev flux-schnell flux-tiny-schnell",
    .denoiser = 1, .cond = RP_COND_TEXT, .guidance = RP_GUIDE_EMBEDDED, .takes_depth = 1,
    .takes_single_depth = 1, .splits_text = 1,
    .param_specs = flux_ops_specs, .facts = flux_ops_facts, .load = flux_ops_load, .forward = flux_ops_forward,
    .free = flux_ops_free, .macs = flux_ops_macs, .schedule = flux_ops_schedule, .model_t = rp_flow_flux_model_t,
};
