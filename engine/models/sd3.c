/* sd3.c — SD3 MMDiT forward (diffusers SD3Transformer2DModel) over plain float buffers.
 *
 * Structure, as diffusers (D = heads * head_dim, T = (H/p)(W/p) image tokens, L text tokens):
 *   pos_embed        patchify ((c, py, px) order) + linear with proj.weight viewed (D, Cin*p*p),
 *                    + the (M, M) pos_embed table cropped at the centre:
 *                    rows top = (M - H/p) / 2 .. , columns left = (M - W/p) / 2 ..
 *   time_text_embed  temb = timestep_embedder(Timesteps(t)) + text_embedder(pooled)
 *                    Timesteps: 256 channels, flip_sin_to_cos (cos first), shift 0
 *                    timestep_embedder = linear_2(silu(linear_1(.))), text_embedder likewise
 *   context_embedder c = linear(context)  (B, L, D)
 *   block N          (x = image stream, c = text stream; every modulation reads silu(temb))
 *     norm1          AdaLayerNormZero: linear -> shift, scale, gate (msa), shift, scale, gate (mlp)
 *     norm1_context  the same for c, or in the last block (context_pre_only) AdaLayerNormContinuous:
 *                    linear -> scale, shift (that order), and no gates / no FF for c
 *     attn           q, k, v = to_q/k/v(LN(x) mod), add_q/k/v_proj(LN(c) mod), split in heads,
 *                    optional RMSNorm per head (norm_q, norm_k, norm_added_q, norm_added_k),
 *                    joint softmax attention over [image tokens, text tokens], scale 1/sqrt(hd),
 *                    image rows -> to_out.0, text rows -> to_add_out (absent in the last block)
 *     x += gate_msa * attn_x;  x += gate_mlp * ff(LN(x) * (1 + scale_mlp) + shift_mlp)
 *     c += c_gate_msa * attn_c; c += c_gate_mlp * ff_context(LN(c) mod)   (not in the last block)
 *     ff = net.2(gelu_tanh(net.0.proj(.)))
 *   dual block N     (MMDiT-X, N < dual_attention_layers; diffusers JointTransformerBlock with
 *                    use_dual_attention): norm1 is SD35AdaLayerNormZeroX, a (9D, D) linear ->
 *                    the six chunks above, then shift_msa2, scale_msa2, gate_msa2; after the
 *                    joint attention's residual (x += gate_msa * attn_x):
 *     attn2          x += gate_msa2 * attn2(LN(x_in) * (1 + scale_msa2) + shift_msa2), x_in the
 *                    block's input (the LN of norm1, before any residual); attn2 is a plain
 *                    self-attention over the image tokens: to_q/k/v, optional per-head RMSNorm
 *                    (norm_q, norm_k), softmax, to_out.0 (no text, no added projections)
 *                    the image FF and the text stream then as in a plain block
 *   norm_out         AdaLayerNormContinuous (scale, shift), proj_out, unpatchify ((py, px, c) order)
 * LayerNorms: eps 1e-6, no affine.
 *
 * Synthetic init rules (rp_sd3_param_specs; they drive synthetic weight files and the
 * weights cache, so a change here needs RP_SYNTHETIC_INIT_VERSION bumped):
 *   linear and patch-embed conv weights   RP_INIT_FANIN  scale 1    (unit-variance outputs)
 *   every bias                            RP_INIT_NORMAL 0.02
 *   norm1 / norm1_context / norm_out      RP_INIT_FANIN  scale 0.2  — the adaLN linears; small
 *     .linear.weight                      so gates stay ~0.1 and 1 + scale stays near 1
 *     (9D rows in a dual block)
 *   RMSNorm weights (qk_norm)             RP_INIT_ONE_NORMAL 0.1   (not all ones, so a missing
 *                                         weight multiply would show)
 *   pos_embed.pos_embed                   RP_INIT_SINCOS_2D: the MAE table at integer grid
 *                                         positions. diffusers builds its buffer with positions
 *                                         scaled by base_size / M (sample_size/p / M); the buffer
 *                                         is stored in real checkpoints, so this only changes the
 *                                         synthetic table, never how a real one is used.
 *
 * Sequence parallelism (ctx->par, engine/parallel/parallel.h): the patch embedding runs on
 * all T image tokens, then this rank keeps its slice [t0, t0 + Tl) of them; the text
 * stream stays whole on every rank (SD3's 333 text tokens are not divisible by the
 * degrees, and xDiT keeps it whole too), so the joint attention is rp_par_attention over
 * [image shard, text] with the text as its replicated segment; attn2 (image tokens only) is
 * rp_par_attention over the image shard alone (no text segment), so ulysses / ring / USP
 * exchange it as any sharded sequence, and numerics invariant takes the same canonical
 * path. Its K/V-hook layer index is depth + N (the joint attentions are 0..depth-1),
 * so pipefusion / patch parallelism cache it apart. proj_out's tokens are
 * gathered before unpatchify. Without ctx->par, Tl = T and every call is the plain one.
 *
 * Memory: parameters live in one allocation (rp_params_load); each forward call
 * makes one activation allocation sized from B, L, H, W and frees it before returning. */
#include "sd3.h"

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

typedef struct sd3_block {
    int pre_only;                             /* context_pre_only (the last block) */
    int dual;                                 /* MMDiT-X dual-attention block (attn2) */
    rp_linear_w norm1;                        /* (6D, D), or (9D, D) when dual */
    rp_linear_w norm1_ctx;                    /* (6D, D), or (2D, D) when pre_only */
    const float *norm_q, *norm_k;             /* (head_dim) each, or NULL without qk_norm */
    rp_linear_w to_q, to_k, to_v;             /* (D, D) each */
    rp_linear_w add_k, add_v, add_q;          /* (D, D) each */
    rp_linear_w to_out;                       /* (D, D) */
    rp_linear_w to_add_out;                   /* (D, D); weight NULL when pre_only */
    const float *norm_added_q, *norm_added_k; /* (head_dim) each, or NULL without qk_norm */
    const float *a2_norm_q, *a2_norm_k;       /* attn2's (head_dim) each; NULL unless dual + qk_norm */
    rp_linear_w a2_q, a2_k, a2_v, a2_out;     /* attn2's (D, D) each; weights NULL unless dual */
    rp_linear_w ff1, ff2;                     /* (F, D), (D, F) */
    rp_linear_w ffc1, ffc2;                   /* (F, D), (D, F); weights NULL when pre_only */
} sd3_block;

struct rp_sd3 {
    rp_sd3_config cfg;
    float *params;            /* every parameter, one allocation */
    size_t n_params;          /* floats in params (the block a device mirrors) */
    const float *pos_embed;   /* (1, M*M, D) */
    rp_linear_w patch_proj;   /* conv weight (D, Cin, p, p) viewed as (D, Cin*p*p) */
    rp_linear_w t_lin1;       /* (D, freq_dim) */
    rp_linear_w t_lin2;       /* (D, D) */
    rp_linear_w p_lin1;       /* (D, Dpool) */
    rp_linear_w p_lin2;       /* (D, D) */
    rp_linear_w ctx_embed;    /* (D, Djoint) */
    sd3_block *blocks;        /* (depth) */
    rp_linear_w norm_out;     /* (2D, D) */
    rp_linear_w proj_out;     /* (p*p*Cout, D) */
};

/* ---- presets ---------------------------------------------------------------- */

typedef struct sd3_preset {
    const char *name;
    int sample_size, patch, in_channels, out_channels, depth, heads, head_dim;
    int joint_attention_dim, caption_projection_dim, pooled_projection_dim, pos_embed_max_size;
    int qk_norm, context_len, dual_attention_layers;
} sd3_preset;

static const sd3_preset PRESETS[] = {
    /* CI-sized; qk_norm on so the SD3.5 RMSNorm path runs; pos_embed_max_size 16 > 16/2
     * so the centre crop is exercised even at the full sample size. */
    {"sd3-tiny", 16, 2, 16, 16, 2, 2, 32, 64, 64, 64, 16, 1, 24, 0},
    /* trained (tests/reference/train/train_digits.py, weights shipped in engine/models/digits/): vae-digits'
     * 4-channel 8x8 latents, te-digits' text (L 32, widths 64); pos_embed_max_size 8 with
     * sample_size 8, as diffusers builds a table larger than the trained grid */
    {"sd3-digits", 8, 2, 4, 4, 3, 2, 32, 64, 64, 64, 8, 1, 32, 0},
    /* stabilityai/stable-diffusion-3-medium-diffusers transformer/config.json */
    {"sd3-medium", 128, 2, 16, 16, 24, 24, 64, 4096, 1536, 2048, 192, 0, 333, 0},
    /* stabilityai/stable-diffusion-3.5-large transformer/config.json: plain MMDiT with qk_norm
     * (rms_norm), no dual-attention layers */
    {"sd3.5-large", 128, 2, 16, 16, 38, 38, 64, 4096, 2432, 2048, 192, 1, 333, 0},
    /* stabilityai/stable-diffusion-3.5-medium transformer/config.json: MMDiT-X,
     * dual_attention_layers (0, ..., 12), qk_norm rms_norm, a 384 x 384 pos_embed table */
    {"sd3.5-medium", 128, 2, 16, 16, 24, 24, 64, 4096, 1536, 2048, 384, 1, 333, 13},
    /* CI-sized MMDiT-X: sd3-tiny's widths, 3 blocks of which 0 and 1 are dual-attention and
     * 2 (context_pre_only) is plain, so both block kinds and their boundary run */
    {"sd3.5-medium-tiny", 16, 2, 16, 16, 3, 2, 32, 64, 64, 64, 16, 1, 24, 2},
};

rp_status rp_sd3_preset(const char *name, rp_sd3_config *cfg, rp_error *err) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof *PRESETS; i++) {
        const sd3_preset *p = &PRESETS[i];
        if (strcmp(name, p->name) != 0) continue;
        memset(cfg, 0, sizeof *cfg);
        snprintf(cfg->preset, sizeof cfg->preset, "%s", p->name);
        cfg->sample_size = p->sample_size;
        cfg->patch = p->patch;
        cfg->in_channels = p->in_channels;
        cfg->out_channels = p->out_channels;
        cfg->depth = p->depth;
        cfg->heads = p->heads;
        cfg->head_dim = p->head_dim;
        cfg->joint_attention_dim = p->joint_attention_dim;
        cfg->caption_projection_dim = p->caption_projection_dim;
        cfg->pooled_projection_dim = p->pooled_projection_dim;
        cfg->pos_embed_max_size = p->pos_embed_max_size;
        cfg->qk_norm = p->qk_norm;
        cfg->mlp_ratio = 4;
        cfg->freq_dim = 256;
        cfg->context_len = p->context_len;
        cfg->dual_attention_layers = p->dual_attention_layers;
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown SD3 preset '%s' (known: sd3-tiny sd3-digits sd3-medium sd3.5-large "
                   "sd3.5-medium sd3.5-medium-tiny)", name);
}

/* Rejects configs the forward cannot run (a hand-edited or overridden preset). */
static rp_status check_cfg(const rp_sd3_config *cfg, rp_error *err) {
    const int D = cfg->heads * cfg->head_dim;
    if (cfg->patch <= 0 || cfg->heads <= 0 || cfg->head_dim <= 0 || cfg->depth <= 0)
        return RP_FAIL(err, RP_ERR_INVALID, "SD3 '%s': patch %d, heads %d, head_dim %d, depth %d must be > 0",
                       cfg->preset, cfg->patch, cfg->heads, cfg->head_dim, cfg->depth);
    if (cfg->caption_projection_dim != D)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "SD3 '%s': caption_projection_dim %d must equal heads * head_dim = %d (the text "
                       "stream shares the image stream's width in every block)",
                       cfg->preset, cfg->caption_projection_dim, D);
    if (D % 4 != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "SD3 '%s': hidden %d must be divisible by 4 (2-D sin-cos pos_embed)",
                       cfg->preset, D);
    if (cfg->dual_attention_layers < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "SD3 '%s': dual_attention_layers %d must be >= 0", cfg->preset,
                       cfg->dual_attention_layers);
    if (cfg->in_channels <= 0 || cfg->out_channels <= 0 || cfg->joint_attention_dim <= 0 ||
        cfg->pooled_projection_dim <= 0 || cfg->pos_embed_max_size <= 0 || cfg->mlp_ratio <= 0 ||
        cfg->freq_dim <= 1)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "SD3 '%s': in_channels %d, out_channels %d, joint_attention_dim %d, "
                       "pooled_projection_dim %d, pos_embed_max_size %d, mlp_ratio %d must be > 0 and "
                       "freq_dim %d > 1",
                       cfg->preset, cfg->in_channels, cfg->out_channels, cfg->joint_attention_dim,
                       cfg->pooled_projection_dim, cfg->pos_embed_max_size, cfg->mlp_ratio, cfg->freq_dim);
    return RP_OK;
}

/* ---- parameter specs (diffusers state_dict order) ------------------------------ */

/* The parameters diffusers' Attention registers first, under transformer_blocks.<i>.<attn>
 * (attn, or a dual block's attn2): norm_q, norm_k (head_dim; with qk_norm), to_q, to_k,
 * to_v (D, D). */
static void qkv_spec(rp_param_list *l, const rp_sd3_config *cfg, int i, const char *attn) {
    const int64_t D = (int64_t)cfg->heads * cfg->head_dim;
    char pre[96];
#define ATT(suffix) (snprintf(pre, sizeof pre, "transformer_blocks.%d.%s." suffix, i, attn), pre)
    if (cfg->qk_norm) {
        rp_params_add_norm(l, ATT("norm_q"), cfg->head_dim);
        rp_params_add_norm(l, ATT("norm_k"), cfg->head_dim);
    }
    rp_params_add_linear(l, ATT("to_q"), D, D, 1.0f);
    rp_params_add_linear(l, ATT("to_k"), D, D, 1.0f);
    rp_params_add_linear(l, ATT("to_v"), D, D, 1.0f);
#undef ATT
}

void rp_sd3_param_specs(const rp_sd3_config *cfg, rp_param_list *l) {
    const int64_t D = (int64_t)cfg->heads * cfg->head_dim, hd = cfg->head_dim, p = cfg->patch;
    const int64_t Mx = cfg->pos_embed_max_size, F = (int64_t)cfg->mlp_ratio * D;
    const int64_t Po = p * p * cfg->out_channels;
    char pre[96];
    /* A module's own parameters and buffers come before its children's in state_dict(),
     * so PatchEmbed's pos_embed buffer precedes proj. */
    rp_params_add(l, RP_INIT_SINCOS_2D, 1.0f, 3, (int64_t[]){1, Mx * Mx, D}, "pos_embed.pos_embed");
    rp_params_add(l, RP_INIT_FANIN, 1.0f, 4, (int64_t[]){D, cfg->in_channels, p, p}, "pos_embed.proj.weight");
    rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, (int64_t[]){D}, "pos_embed.proj.bias");
    rp_params_add_linear(l, "time_text_embed.timestep_embedder.linear_1", D, cfg->freq_dim, 1.0f);
    rp_params_add_linear(l, "time_text_embed.timestep_embedder.linear_2", D, D, 1.0f);
    rp_params_add_linear(l, "time_text_embed.text_embedder.linear_1", D, cfg->pooled_projection_dim, 1.0f);
    rp_params_add_linear(l, "time_text_embed.text_embedder.linear_2", D, D, 1.0f);
    rp_params_add_linear(l, "context_embedder", D, cfg->joint_attention_dim, 1.0f);
    for (int i = 0; i < cfg->depth; i++) {
        const int pre_only = i == cfg->depth - 1, dual = i < cfg->dual_attention_layers;
#define BLK(suffix) (snprintf(pre, sizeof pre, "transformer_blocks.%d." suffix, i), pre)
        rp_params_add_linear(l, BLK("norm1.linear"), (dual ? 9 : 6) * D, D, 0.2f);
        rp_params_add_linear(l, BLK("norm1_context.linear"), (pre_only ? 2 : 6) * D, D, 0.2f);
        /* diffusers Attention.__init__ order: norm_q/k, to_q/k/v, add_k/v/q_proj, to_out,
         * to_add_out, norm_added_q/k. */
        qkv_spec(l, cfg, i, "attn");
        rp_params_add_linear(l, BLK("attn.add_k_proj"), D, D, 1.0f);
        rp_params_add_linear(l, BLK("attn.add_v_proj"), D, D, 1.0f);
        rp_params_add_linear(l, BLK("attn.add_q_proj"), D, D, 1.0f);
        rp_params_add_linear(l, BLK("attn.to_out.0"), D, D, 1.0f);
        if (!pre_only) rp_params_add_linear(l, BLK("attn.to_add_out"), D, D, 1.0f);
        if (cfg->qk_norm) {
            rp_params_add_norm(l, BLK("attn.norm_added_q"), hd);
            rp_params_add_norm(l, BLK("attn.norm_added_k"), hd);
        }
        if (dual) { /* JointTransformerBlock registers attn2 after attn */
            qkv_spec(l, cfg, i, "attn2");
            rp_params_add_linear(l, BLK("attn2.to_out.0"), D, D, 1.0f);
        }
        rp_params_add_linear(l, BLK("ff.net.0.proj"), F, D, 1.0f);
        rp_params_add_linear(l, BLK("ff.net.2"), D, F, 1.0f);
        if (!pre_only) {
            rp_params_add_linear(l, BLK("ff_context.net.0.proj"), F, D, 1.0f);
            rp_params_add_linear(l, BLK("ff_context.net.2"), D, F, 1.0f);
        }
#undef BLK
    }
    rp_params_add_linear(l, "norm_out.linear", 2 * D, D, 0.2f);
    rp_params_add_linear(l, "proj_out", Po, D, 1.0f);
}

/* ---- loading -------------------------------------------------------------------- */

/* Which blocks are dual-attention is part of the preset; a checkpoint says it by having
 * attn2 (the view of an original-named file holds it under diffusers' names too). A
 * disagreement is named here, per block, instead of as the first shape or missing-tensor
 * error it would cause (norm1.linear's 9D vs 6D rows). Blocks >= depth are not read. */
static rp_status check_dual_blocks(const rp_sd3_config *cfg, const rp_st_file *f, rp_error *err) {
    for (int i = 0; i < cfg->depth; i++) {
        char nm[96];
        snprintf(nm, sizeof nm, "transformer_blocks.%d.attn2.to_q.weight", i);
        const int has = rp_st_find(f, nm) != NULL, want = i < cfg->dual_attention_layers;
        if (has == want) continue;
        if (has)
            return RP_FAIL(err, RP_ERR_SHAPE,
                           "%s: block %d has '%s' (an MMDiT-X dual-attention block, as SD3.5 Medium's first 13), "
                           "but model '%s' has dual attention in %d block(s) (use sd3.5-medium for SD3.5 Medium, "
                           "sd3.5-medium-tiny for its CI-sized layout)",
                           f->path, i, nm, cfg->preset, cfg->dual_attention_layers);
        return RP_FAIL(err, RP_ERR_SHAPE,
                       "%s: model '%s' has dual attention (attn2) in blocks 0..%d, but block %d has no '%s' "
                       "(a plain MMDiT checkpoint: SD3 Medium loads as sd3-medium, SD3.5 Large as sd3.5-large)",
                       f->path, cfg->preset, cfg->dual_attention_layers - 1, i, nm);
    }
    return RP_OK;
}

/* Takes what qkv_spec wrote for transformer_blocks.<i>.<attn> (nq, nk stay NULL without
 * qk_norm). */
static void take_qkv(rp_param_cursor *c, const rp_sd3_config *cfg, int i, const char *attn, const float **nq,
                     const float **nk, rp_linear_w *q, rp_linear_w *k, rp_linear_w *v) {
    const int D = cfg->heads * cfg->head_dim;
    char pre[96];
#define ATT(suffix) (snprintf(pre, sizeof pre, "transformer_blocks.%d.%s." suffix, i, attn), pre)
    if (cfg->qk_norm) {
        *nq = rp_param_take_weight(c, ATT("norm_q"));
        *nk = rp_param_take_weight(c, ATT("norm_k"));
    }
    *q = rp_param_take_linear(c, ATT("to_q"), D, D);
    *k = rp_param_take_linear(c, ATT("to_k"), D, D);
    *v = rp_param_take_linear(c, ATT("to_v"), D, D);
#undef ATT
}

rp_status rp_sd3_load(const rp_sd3_config *cfg, const rp_st_file *f, rp_sd3 **out, rp_error *err) {
    RP_TRY(check_cfg(cfg, err));
    RP_TRY(check_dual_blocks(cfg, f, err));
    const int D = cfg->heads * cfg->head_dim, p = cfg->patch, F = cfg->mlp_ratio * D;
    const int Po = p * p * cfg->out_channels;
    rp_sd3 *m = calloc(1, sizeof *m);
    if (!m || !(m->blocks = calloc((size_t)cfg->depth, sizeof *m->blocks))) {
        free(m);
        return RP_FAIL(err, RP_ERR_NOMEM, "SD3 '%s': out of memory for the model description", cfg->preset);
    }
    m->cfg = *cfg;
    rp_param_cursor c = {.prefix = ""};
    rp_sd3_param_specs(cfg, &c.l);
    rp_status st = rp_param_cursor_load(&c, f, &m->params, &m->n_params, err);
    if (st != RP_OK) {
        rp_sd3_free(m);
        return st;
    }
    char pre[96];
    m->pos_embed = rp_param_take(&c, "pos_embed.pos_embed");
    m->patch_proj = rp_param_take_linear(&c, "pos_embed.proj", cfg->in_channels * p * p, D);
    m->t_lin1 = rp_param_take_linear(&c, "time_text_embed.timestep_embedder.linear_1", cfg->freq_dim, D);
    m->t_lin2 = rp_param_take_linear(&c, "time_text_embed.timestep_embedder.linear_2", D, D);
    m->p_lin1 = rp_param_take_linear(&c, "time_text_embed.text_embedder.linear_1", cfg->pooled_projection_dim, D);
    m->p_lin2 = rp_param_take_linear(&c, "time_text_embed.text_embedder.linear_2", D, D);
    m->ctx_embed = rp_param_take_linear(&c, "context_embedder", cfg->joint_attention_dim, D);
    for (int i = 0; i < cfg->depth; i++) {
        sd3_block *b = &m->blocks[i];
        b->pre_only = i == cfg->depth - 1;
        b->dual = i < cfg->dual_attention_layers;
#define BLK(suffix) (snprintf(pre, sizeof pre, "transformer_blocks.%d." suffix, i), pre)
        b->norm1 = rp_param_take_linear(&c, BLK("norm1.linear"), D, (b->dual ? 9 : 6) * D);
        b->norm1_ctx = rp_param_take_linear(&c, BLK("norm1_context.linear"), D, (b->pre_only ? 2 : 6) * D);
        take_qkv(&c, cfg, i, "attn", &b->norm_q, &b->norm_k, &b->to_q, &b->to_k, &b->to_v);
        b->add_k = rp_param_take_linear(&c, BLK("attn.add_k_proj"), D, D);
        b->add_v = rp_param_take_linear(&c, BLK("attn.add_v_proj"), D, D);
        b->add_q = rp_param_take_linear(&c, BLK("attn.add_q_proj"), D, D);
        b->to_out = rp_param_take_linear(&c, BLK("attn.to_out.0"), D, D);
        if (!b->pre_only) b->to_add_out = rp_param_take_linear(&c, BLK("attn.to_add_out"), D, D);
        if (cfg->qk_norm) {
            b->norm_added_q = rp_param_take_weight(&c, BLK("attn.norm_added_q"));
            b->norm_added_k = rp_param_take_weight(&c, BLK("attn.norm_added_k"));
        }
        if (b->dual) {
            take_qkv(&c, cfg, i, "attn2", &b->a2_norm_q, &b->a2_norm_k, &b->a2_q, &b->a2_k, &b->a2_v);
            b->a2_out = rp_param_take_linear(&c, BLK("attn2.to_out.0"), D, D);
        }
        b->ff1 = rp_param_take_linear(&c, BLK("ff.net.0.proj"), D, F);
        b->ff2 = rp_param_take_linear(&c, BLK("ff.net.2"), F, D);
        if (!b->pre_only) {
            b->ffc1 = rp_param_take_linear(&c, BLK("ff_context.net.0.proj"), D, F);
            b->ffc2 = rp_param_take_linear(&c, BLK("ff_context.net.2"), F, D);
        }
#undef BLK
    }
    m->norm_out = rp_param_take_linear(&c, "norm_out.linear", D, 2 * D);
    m->proj_out = rp_param_take_linear(&c, "proj_out", D, Po);
    rp_param_cursor_end(&c);
    *out = m;
    return RP_OK;
}

void rp_sd3_free(rp_sd3 *m) {
    if (!m) return;
    free(m->params);
    free(m->blocks);
    free(m);
}

const rp_sd3_config *rp_sd3_cfg(const rp_sd3 *m) { return &m->cfg; }

/* ---- forward ------------------------------------------------------------------- */

/* One forward's shapes and activation buffers (rp_sd3_forward lays them out), read and
 * written by the block functions. The image rows are this rank's Tl of T (all of them
 * without sequence parallelism); the text stream's L rows are whole on every rank. */
typedef struct sd3_fwd {
    int B, T, Tl, L, Sl;         /* batch; image tokens (all, this rank's); text tokens; Tl + L */
    int Hh, hd, D, F;            /* heads, head_dim, width, FF hidden */
    size_t BTl, BL;              /* B * Tl, B * L */
    float scale;                 /* 1 / sqrt(hd), SDPA's default */
    float mlp_ln_eps;            /* the image FF's LayerNorm eps (1e-6; norm-eps-rank fault) */
    const int *tok;              /* (Tl) global image token index for the trace, or NULL */
    const uint8_t *jmask;        /* (B, Sl) joint key mask, or NULL */
    const float *stemb;          /* (B, D) silu(temb): every adaLN linear's input */
    float *xs, *hx, *yx;         /* (B, Tl, D) image stream; its normed + modulated input, then
                                    attention out; attention / FF output before its gate */
    float *cs, *hc, *yc;         /* (B, L, D) the same for the text stream */
    float *h2;                   /* (B, Tl, D) attn2's modulated input; NULL without dual blocks */
    float *qx, *kx, *vx;         /* (B, Tl, H, hd) image q, k, v */
    float *qc, *kc, *vc;         /* (B, L, H, hd) text q, k, v */
    float *q, *k, *v, *att;      /* (B, H, Sl, hd) heads (attn2: (B, H, Tl, hd)) */
    float *mh;                   /* (B, max(Tl, L), F) FF hidden; aliases the attention scratch */
    float *modx;                 /* (B, 9D) image modulation (6D used by plain blocks) */
    float *modc;                 /* (B, 6D) text modulation */
} sd3_fwd;

/* Rows [s0, s0 + n) of a's heads (q, k, v: (B, H, S, hd)) from the stream h (B, n, D):
 * the q, k, v projections into qs, ks, vs (B, n, H, hd), the per-head RMSNorm (nq, nk;
 * NULL without qk_norm), the split into heads (torch.cat of the streams along S). */
static void project_heads(const rp_ctx *ctx, const sd3_fwd *a, float *qs, float *ks, float *vs, const float *h,
                          int n, const rp_linear_w *wq, const rp_linear_w *wk, const rp_linear_w *wv,
                          const float *nq, const float *nk, int S, int s0) {
    const size_t rows = (size_t)a->B * n;
    rp_d_linear(ctx, qs, h, wq, (int)rows);
    rp_d_linear(ctx, ks, h, wk, (int)rows);
    rp_d_linear(ctx, vs, h, wv, (int)rows);
    if (nq) { /* RMSNorm over head_dim: rows of (B*n*H, hd) */
        rp_d_rmsnorm(ctx, qs, qs, nq, (int)(rows * a->Hh), a->hd, 1e-6f);
        rp_d_rmsnorm(ctx, ks, ks, nk, (int)(rows * a->Hh), a->hd, 1e-6f);
    }
    rp_d_to_heads(ctx, a->q, qs, a->B, n, a->Hh, a->hd, S, s0);
    rp_d_to_heads(ctx, a->k, ks, a->B, n, a->Hh, a->hd, S, s0);
    rp_d_to_heads(ctx, a->v, vs, a->B, n, a->Hh, a->hd, S, s0);
}

/* Block i's joint attention and its residuals, from the modulated inputs hx, hc: attention
 * over [image shard, text] (JointAttnProcessor's torch.cat([img, txt], dim=2)), then
 * x += gate_msa * to_out.0(image rows) and, but in the last block, c += c_gate_msa *
 * to_add_out(text rows). ms, mcs: the row strides of modx, modc. */
static rp_status joint_attention(const rp_sd3 *m, const rp_ctx *ctx, int i, const sd3_fwd *a, int ms, int mcs,
                                 rp_error *err) {
    const sd3_block *blk = &m->blocks[i];
    const int B = a->B, Tl = a->Tl, L = a->L, Sl = a->Sl, D = a->D;
    char name[96];
    project_heads(ctx, a, a->qx, a->kx, a->vx, a->hx, Tl, &blk->to_q, &blk->to_k, &blk->to_v, blk->norm_q,
                  blk->norm_k, Sl, 0);
    project_heads(ctx, a, a->qc, a->kc, a->vc, a->hc, L, &blk->add_q, &blk->add_k, &blk->add_v,
                  blk->norm_added_q, blk->norm_added_k, Sl, Tl);
    RP_TRY(rp_par_attention(ctx, i, a->att, a->q, a->k, a->v, a->jmask, B, a->Hh, Sl, 0, L, a->hd, a->scale, err));
    /* hx, hc reused: their content is consumed */
    rp_d_from_heads(ctx, a->hx, D, a->att, B, Sl, 0, Tl, a->Hh, a->hd);
    rp_d_from_heads(ctx, a->hc, D, a->att, B, Sl, Tl, L, a->Hh, a->hd);
    rp_d_linear(ctx, a->yx, a->hx, &blk->to_out, (int)a->BTl);
    snprintf(name, sizeof name, "transformer_blocks.%d.attn", i);
    rp_par_trace(ctx, name, a->yx, B, Tl, D, a->tok, a->T);
    rp_d_gated_add(ctx, a->xs, a->modx + 2 * D, ms, a->yx, B, Tl, D);
    if (!blk->pre_only) {
        rp_d_linear(ctx, a->yc, a->hc, &blk->to_add_out, (int)a->BL);
        snprintf(name, sizeof name, "transformer_blocks.%d.attn.context", i);
        rp_par_trace(ctx, name, a->yc, B, L, D, NULL, L);
        rp_d_gated_add(ctx, a->cs, a->modc + 2 * D, mcs, a->yc, B, L, D);
    }
    return RP_OK;
}

/* MMDiT-X's second attention in dual block i, after the joint attention's residual:
 * x += gate_msa2 * to_out.0(attn2(h2)), a self-attention over the image tokens alone (h2
 * = LN(the block's input) * (1 + scale_msa2) + shift_msa2, made by sd3_block_forward).
 * Under sequence parallelism it is rp_par_attention over the image shard with no text
 * segment; its K/V-hook index is depth + i, apart from the joint attentions' 0..depth-1.
 * The image scratch (qx, kx, vx, q, k, v, att, hx, yx) is free again here. */
static rp_status dual_attention(const rp_sd3 *m, const rp_ctx *ctx, int i, const sd3_fwd *a, rp_error *err) {
    const sd3_block *blk = &m->blocks[i];
    const int B = a->B, Tl = a->Tl, D = a->D;
    char name[96];
    assert(blk->dual && a->h2);
    project_heads(ctx, a, a->qx, a->kx, a->vx, a->h2, Tl, &blk->a2_q, &blk->a2_k, &blk->a2_v, blk->a2_norm_q,
                  blk->a2_norm_k, Tl, 0);
    RP_TRY(rp_par_attention(ctx, m->cfg.depth + i, a->att, a->q, a->k, a->v, NULL, B, a->Hh, Tl, 0, 0, a->hd,
                            a->scale, err));
    rp_d_from_heads(ctx, a->hx, D, a->att, B, Tl, 0, Tl, a->Hh, a->hd);
    rp_d_linear(ctx, a->yx, a->hx, &blk->a2_out, (int)a->BTl);
    snprintf(name, sizeof name, "transformer_blocks.%d.attn2", i);
    rp_par_trace(ctx, name, a->yx, B, Tl, D, a->tok, a->T);
    rp_d_gated_add(ctx, a->xs, a->modx + 8 * D, 9 * D, a->yx, B, Tl, D);
    return RP_OK;
}

/* Block i on a's streams (diffusers JointTransformerBlock.forward): the modulations, the
 * joint attention, attn2 in a dual block, the image FF, and the text FF but in the last
 * block (context_pre_only: the text stream is left unused, as diffusers returns None). */
static rp_status sd3_block_forward(const rp_sd3 *m, const rp_ctx *ctx, int i, const sd3_fwd *a, rp_error *err) {
    const sd3_block *blk = &m->blocks[i];
    const int B = a->B, Tl = a->Tl, L = a->L, D = a->D, F = a->F;
    const size_t BTl = a->BTl, BL = a->BL;
    const int ms = (blk->dual ? 9 : 6) * D, mcs = blk->pre_only ? 2 * D : 6 * D; /* row strides of modx, modc */
    char name[96];
    /* modx (B, 6D) = [shift_msa | scale_msa | gate_msa | shift_mlp | scale_mlp | gate_mlp],
     * (B, 9D) with [shift_msa2 | scale_msa2 | gate_msa2] after them in a dual block; modc
     * likewise (6D), or (B, 2D) = [scale | shift] in the context_pre_only block. */
    rp_d_linear(ctx, a->modx, a->stemb, &blk->norm1, B);
    rp_d_linear(ctx, a->modc, a->stemb, &blk->norm1_ctx, B);

    rp_d_layernorm(ctx, a->hx, a->xs, NULL, NULL, (int)BTl, D, 1e-6f);
    if (blk->dual) { /* SD35AdaLayerNormZeroX: attn2's input is the same LN(x), modulated by msa2 */
        rp_d_copy(ctx, a->h2, a->hx, BTl * D);
        rp_d_modulate(ctx, a->h2, a->modx + 6 * D, a->modx + 7 * D, ms, B, Tl, D);
    }
    rp_d_modulate(ctx, a->hx, a->modx + 0 * D, a->modx + 1 * D, ms, B, Tl, D);
    rp_d_layernorm(ctx, a->hc, a->cs, NULL, NULL, (int)BL, D, 1e-6f);
    if (blk->pre_only)
        rp_d_modulate(ctx, a->hc, a->modc + D, a->modc, mcs, B, L, D); /* AdaLayerNormContinuous: scale, shift */
    else
        rp_d_modulate(ctx, a->hc, a->modc + 0 * D, a->modc + 1 * D, mcs, B, L, D);

    RP_TRY(joint_attention(m, ctx, i, a, ms, mcs, err));
    if (blk->dual) RP_TRY(dual_attention(m, ctx, i, a, err));

    /* image FF */
    rp_d_layernorm(ctx, a->hx, a->xs, NULL, NULL, (int)BTl, D, a->mlp_ln_eps);
    rp_d_modulate(ctx, a->hx, a->modx + 3 * D, a->modx + 4 * D, ms, B, Tl, D);
    rp_ctx mlp_tmp;
    const rp_ctx *mc = rp_par_mlp_ctx(ctx, i, &mlp_tmp); /* ctx (bf16-layer-rank: bf16 on one rank) */
    rp_d_linear(mc, a->mh, a->hx, &blk->ff1, (int)BTl);
    rp_par_mlp_act_input(ctx, i, a->mh, BTl * F); /* act-bf16-rank */
    rp_d_gelu_tanh(ctx, a->mh, a->mh, BTl * F);
    rp_d_linear(mc, a->yx, a->mh, &blk->ff2, (int)BTl);
    snprintf(name, sizeof name, "transformer_blocks.%d.ff", i);
    rp_par_trace(ctx, name, a->yx, B, Tl, D, a->tok, a->T);
    rp_d_gated_add(ctx, a->xs, a->modx + 5 * D, ms, a->yx, B, Tl, D);

    /* text FF */
    if (!blk->pre_only) {
        rp_d_layernorm(ctx, a->hc, a->cs, NULL, NULL, (int)BL, D, 1e-6f);
        rp_d_modulate(ctx, a->hc, a->modc + 3 * D, a->modc + 4 * D, mcs, B, L, D);
        rp_d_linear(ctx, a->mh, a->hc, &blk->ffc1, (int)BL);
        rp_d_gelu_tanh(ctx, a->mh, a->mh, BL * F);
        rp_d_linear(ctx, a->yc, a->mh, &blk->ffc2, (int)BL);
        snprintf(name, sizeof name, "transformer_blocks.%d.ff_context", i);
        rp_par_trace(ctx, name, a->yc, B, L, D, NULL, L);
        rp_d_gated_add(ctx, a->cs, a->modc + 5 * D, mcs, a->yc, B, L, D);
    }

    snprintf(name, sizeof name, "transformer_blocks.%d", i);
    rp_par_trace(ctx, name, a->xs, B, Tl, D, a->tok, a->T);
    if (!blk->pre_only) {
        snprintf(name, sizeof name, "transformer_blocks.%d.context", i);
        rp_par_trace(ctx, name, a->cs, B, L, D, NULL, L);
    }
    return RP_OK;
}

rp_status rp_sd3_forward(const rp_sd3 *m, const rp_ctx *ctx, float *out, const float *x,
                         const float *t, const float *context, const uint8_t *context_mask,
                         const float *pooled, int B, int L, int H, int W, rp_error *err) {
    assert(m && ctx && out && x && t && context && pooled);
    const rp_sd3_config *cfg = &m->cfg;
    const int p = cfg->patch, Mx = cfg->pos_embed_max_size;
    if (B <= 0 || L <= 0)
        return RP_FAIL(err, RP_ERR_INVALID, "SD3 forward: batch %d and text length %d must be > 0", B, L);
    if (H <= 0 || W <= 0 || H % p != 0 || W % p != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "SD3 forward: latent %dx%d is not a positive multiple of patch %d",
                       H, W, p);
    if (H / p > Mx || W / p > Mx)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "SD3 forward: latent %dx%d is a %dx%d patch grid, larger than pos_embed_max_size %d",
                       H, W, H / p, W / p, Mx);

    const int Cin = cfg->in_channels, Cout = cfg->out_channels, Hh = cfg->heads, hd = cfg->head_dim;
    const int D = Hh * hd, F = cfg->mlp_ratio * D, Fq = cfg->freq_dim;
    const int gh = H / p, gw = W / p, T = gh * gw, S = T + L, P = Cin * p * p, Po = p * p * Cout;
    const size_t BT = (size_t)B * T, BL = (size_t)B * L, BS = (size_t)B * S;
    int t0, Tl; /* this rank's image tokens [t0, t0 + Tl) (sequence parallelism; else 0, T) */
    RP_TRY(rp_par_shard(ctx, T, &t0, &Tl, err));
    const int Sl = Tl + L; /* this rank's joint sequence [image shard, text] */
    const size_t BTl = (size_t)B * Tl;
    /* The attention scratch (q, k, v per stream: 3 (BT + BL) D; joint q, k, v, out: 4 BS D)
     * is dead while an FF hidden (B, max(T, L), F) is live and vice versa: one region. */
    const size_t n_attn = 3 * (BT + BL) * D + 4 * BS * D;
    const size_t n_ff = (size_t)B * (T > L ? T : L) * F;
    const size_t n_shared = n_attn > n_ff ? n_attn : n_ff;
    const size_t n_mask = (BS + sizeof(float) - 1) / sizeof(float); /* uint8 (B, S) in float units */
    /* attn2's input lives through the joint attention: its own (B, T, D), with dual blocks */
    const size_t n_h2 = cfg->dual_attention_layers > 0 ? BT * D : 0;

    const int Djoint = cfg->joint_attention_dim, Dpool = cfg->pooled_projection_dim;
    const size_t n_io = (size_t)B * Cin * H * W    /* xin */
                        + (size_t)B * Cout * H * W  /* outd */
                        + (size_t)B                 /* tin */
                        + BL * Djoint               /* ctxin */
                        + (size_t)B * Dpool;        /* poolin */
    const size_t n_total = BT * P                 /* patches */
                           + 3 * BT * D           /* xs, hx, yx */
                           + 3 * BL * D           /* cs, hc, yc */
                           + n_h2                 /* h2 */
                           + n_shared             /* attention scratch | FF hidden */
                           + BT * Po              /* fin */
                           + (size_t)B * Fq       /* tfreq */
                           + (size_t)B * D * 4    /* th, ph, temb, stemb */
                           + (size_t)B * 15 * D   /* modx (9D), modc (6D) */
                           + n_mask
                           + (ctx->dev ? n_io : 0);
    /* On a device (engine/device.h) every buffer below is device memory and the
     * parameters are read through their mirror; without one this is the CPU path. */
    RP_TRY(rp_d_mirror(ctx, m->params, m->n_params * sizeof(float), err));
    float *mem = rp_d_alloc(ctx, n_total, err);
    int *tok = ctx->par ? malloc(sizeof(int) * Tl) : NULL; /* (Tl) global image token index, for the trace */
    /* the joint key mask is built on the host: in mem without a device, else staged here */
    uint8_t *jmask_h = ctx->dev && context_mask ? calloc(n_mask, sizeof(float)) : NULL;
    if (!mem || (ctx->par && !tok) || (ctx->dev && context_mask && !jmask_h)) {
        rp_d_free(ctx, mem);
        free(tok);
        free(jmask_h);
        rp_d_check(ctx, NULL);
        return RP_FAIL(err, RP_ERR_NOMEM,
                       "SD3 forward: cannot allocate %.1f MiB of activations for batch %d, %d image and %d "
                       "text tokens",
                       n_total * sizeof(float) / 1048576.0, B, T, L);
    }
    for (int j = 0; tok && j < Tl; j++) tok[j] = t0 + j;
    float *cur = mem;
    float *patches = cur; cur += BT * P;        /* (B, T, Cin*p*p) */
    float *xs = cur;      cur += BT * D;        /* (B, T, D) image residual stream; (B, Tl, D) after pos_embed */
    float *hx = cur;      cur += BT * D;        /* (B, T, D) normed + modulated image input; attn out */
    float *yx = cur;      cur += BT * D;        /* (B, T, D) image attn / ff output, before the gate */
    float *cs = cur;      cur += BL * D;        /* (B, L, D) text residual stream */
    float *hc = cur;      cur += BL * D;        /* (B, L, D) normed + modulated text input; attn out */
    float *yc = cur;      cur += BL * D;        /* (B, L, D) text attn / ff output, before the gate */
    float *h2 = n_h2 ? cur : NULL; cur += n_h2; /* (B, T, D) attn2's modulated input (dual blocks) */
    float *shared = cur;  cur += n_shared;
    float *qx = shared;                         /* (B, T, H, hd) */
    float *kx = qx + BT * D;                    /* (B, T, H, hd) */
    float *vx = kx + BT * D;                    /* (B, T, H, hd) */
    float *qc = vx + BT * D;                    /* (B, L, H, hd) */
    float *kc = qc + BL * D;                    /* (B, L, H, hd) */
    float *vc = kc + BL * D;                    /* (B, L, H, hd) */
    float *q = vc + BL * D;                     /* (B, H, S, hd) joint queries */
    float *k = q + BS * D;                      /* (B, H, S, hd) */
    float *v = k + BS * D;                      /* (B, H, S, hd) */
    float *att = v + BS * D;                    /* (B, H, S, hd) */
    assert((size_t)(att + BS * D - shared) == n_attn);
    float *mh = shared;                         /* (B, max(T, L), F) FF hidden */
    float *fin = cur;     cur += BT * Po;       /* (B, T, p*p*Cout) final tokens, (py, px, c) order */
    float *tfreq = cur;   cur += (size_t)B * Fq; /* (B, 256) */
    float *th = cur;      cur += (size_t)B * D; /* (B, D) timestep_embedder hidden */
    float *ph = cur;      cur += (size_t)B * D; /* (B, D) text_embedder hidden, then its output */
    float *temb = cur;    cur += (size_t)B * D; /* (B, D) conditioning */
    float *stemb = cur;   cur += (size_t)B * D; /* (B, D) silu(temb): input of every adaLN linear */
    float *modx = cur;    cur += (size_t)B * 9 * D; /* (B, 6D), (B, 9D) in a dual block, (B, 2D) for norm_out */
    float *modc = cur;    cur += (size_t)B * 6 * D; /* (B, 6D), or (B, 2D) when pre_only */
    uint8_t *jmask = (uint8_t *)cur; cur += n_mask; /* (B, S) joint key mask; used iff context_mask */
    /* the inputs where the ops read them, and where unpatchify writes */
    const float *xin = x, *tin = t, *ctxin = context, *poolin = pooled;
    float *outd = out;
    if (ctx->dev) {
        float *xd = cur;    cur += (size_t)B * Cin * H * W;
        outd = cur;         cur += (size_t)B * Cout * H * W;
        float *td = cur;    cur += (size_t)B;
        float *cd = cur;    cur += BL * Djoint;
        float *pd = cur;    cur += (size_t)B * Dpool;
        rp_d_upload(ctx, xd, x, (size_t)B * Cin * H * W);
        rp_d_upload(ctx, td, t, (size_t)B);
        rp_d_upload(ctx, cd, context, BL * Djoint);
        rp_d_upload(ctx, pd, pooled, (size_t)B * Dpool);
        xin = xd;
        tin = td;
        ctxin = cd;
        poolin = pd;
    }
    assert((size_t)(cur - mem) == n_total);

    rp_status st = RP_OK;

    /* pos_embed: Conv2d(k = s = p) == patchify + linear; then + the centre crop of the
     * (M, M) table (diffusers cropped_pos_embed: top = (M - gh) // 2, left = (M - gw) // 2),
     * gathered into yx (free until the first block) as a (T, D) table. Under sequence
     * parallelism the whole sequence is embedded into hx, then this rank's slice copied. */
    float *xe = Tl < T ? hx : xs; /* (B, T, D) */
    /* the text encoder's output as the transformer takes it: the conditioning's first traced
     * point, so a fault in the encoder is named there, not at its first consumer */
    rp_par_trace(ctx, "text_encoder", ctxin, B, L, cfg->joint_attention_dim, NULL, L);
    rp_par_trace(ctx, "text_encoder.pooled", poolin, B, 1, cfg->pooled_projection_dim, NULL, 1);
    rp_d_patchify(ctx, patches, xin, B, Cin, H, W, p);
    rp_d_linear(ctx, xe, patches, &m->patch_proj, (int)BT);
    {
        const int top = (Mx - gh) / 2, left = (Mx - gw) / 2;
        for (int i = 0; i < gh; i++)
            rp_d_copy(ctx, yx + (size_t)i * gw * D, m->pos_embed + ((size_t)(top + i) * Mx + left) * D,
                      (size_t)gw * D);
        rp_d_add_bcast(ctx, xe, yx, B, (size_t)T * D);
    }
    rp_par_trace(ctx, "pos_embed", xe, B, T, D, NULL, T);
    if (Tl < T) /* keep this rank's slice: item b's rows [t0, t0 + Tl) to xs[b] */
        for (int b = 0; b < B; b++)
            rp_d_copy(ctx, xs + (size_t)b * Tl * D, xe + ((size_t)b * T + t0) * D, (size_t)Tl * D);

    /* time_text_embed: Timesteps(256, flip_sin_to_cos=True, shift 0) -> [cos, sin]. */
    rp_timestep_embedder(ctx, temb, th, tfreq, tin, B, Fq, &m->t_lin1, &m->t_lin2);
    rp_silu_mlp(ctx, stemb, ph, poolin, B, &m->p_lin1, &m->p_lin2); /* stemb holds the text embedding for one line */
    rp_d_add(ctx, temb, stemb, (size_t)B * D);  /* timesteps_emb + pooled_projections */
    rp_par_trace(ctx, "time_text_embed", temb, B, 1, D, NULL, 1);
    rp_d_silu(ctx, stemb, temb, (size_t)B * D);

    rp_d_linear(ctx, cs, ctxin, &m->ctx_embed, (int)BL);
    rp_par_trace(ctx, "context_embedder", cs, B, L, D, NULL, L);

    if (context_mask) {
        /* Image tokens are always keys; text tokens as the caller's mask says. Built on the
         * host from the caller's host mask; on a device, staged and uploaded. */
        uint8_t *jm = jmask_h ? jmask_h : jmask;
        for (int b = 0; b < B; b++) {
            memset(jm + (size_t)b * S, 1, (size_t)T);
            for (int j = 0; j < L; j++) jm[(size_t)b * S + T + j] = context_mask[(size_t)b * L + j] != 0;
        }
        if (jmask_h) rp_d_upload(ctx, (float *)jmask, (const float *)jmask_h, n_mask);
    }

    const float scale = (float)(1.0 / sqrt((double)hd)); /* SDPA default: 1 / sqrt(head_dim) */
    /* the image stream's MLP LayerNorm (norm2): 1e-6 as the others (norm-eps-rank: 1e-5 on one rank) */
    const float mlp_ln_eps = rp_par_norm_eps(ctx, 1e-6f);
    int ba, bb; /* the blocks this rank runs (all, unless a pipeline hook owns a range) */
    rp_par_block_range(ctx, cfg->depth, &ba, &bb);
    st = rp_par_stream(ctx, RP_PAR_STREAM_ENTER, ba, xs, BTl, cs, BL, D, err);
    if (st != RP_OK) goto done;
    const sd3_fwd a = {.B = B, .T = T, .Tl = Tl, .L = L, .Sl = Sl, .Hh = Hh, .hd = hd, .D = D, .F = F,
                       .BTl = BTl, .BL = BL, .scale = scale, .mlp_ln_eps = mlp_ln_eps, .tok = tok,
                       .jmask = context_mask ? jmask : NULL, .stemb = stemb, .xs = xs, .hx = hx, .yx = yx,
                       .cs = cs, .hc = hc, .yc = yc, .h2 = h2, .qx = qx, .kx = kx, .vx = vx, .qc = qc,
                       .kc = kc, .vc = vc, .q = q, .k = k, .v = v, .att = att, .mh = mh, .modx = modx,
                       .modc = modc};
    for (int i = ba; i < bb; i++)
        if ((st = sd3_block_forward(m, ctx, i, &a, err)) != RP_OK) goto done;

    st = rp_par_stream(ctx, RP_PAR_STREAM_LEAVE, bb - 1, xs, BTl, cs, BL, D, err);
    if (st != RP_OK || bb < cfg->depth) goto done; /* a later pipeline stage finishes the forward */

    /* norm_out: AdaLayerNormContinuous, modx (B, 2D) = [scale | shift] */
    rp_d_linear(ctx, modx, stemb, &m->norm_out, B);
    rp_d_layernorm(ctx, hx, xs, NULL, NULL, (int)BTl, D, 1e-6f);
    rp_d_modulate(ctx, hx, modx + D, modx, 2 * D, B, Tl, D);
    rp_d_linear(ctx, fin, hx, &m->proj_out, (int)BTl);
    if (Tl < T && (st = rp_par_gather_tokens(ctx, fin, fin, B, T, Po, t0, Tl, err)) != RP_OK) goto done;
    rp_par_trace(ctx, "proj_out", fin, B, T, Po, NULL, T);
    rp_d_unpatchify(ctx, outd, fin, B, Cout, H, W, p);
    if (ctx->dev) rp_d_download(ctx, out, outd, (size_t)B * Cout * H * W);

done:
    st = rp_par_forward_end(ctx, st, err);
    rp_d_free(ctx, mem);
    free(tok);
    free(jmask_h);
    return st;
}

/* ---- cost -------------------------------------------------------------------------- */

double rp_sd3_macs(const rp_sd3_config *cfg, int L, int H, int W) {
    if (H <= 0) H = cfg->sample_size;
    if (W <= 0) W = cfg->sample_size;
    const double D = (double)cfg->heads * cfg->head_dim, p = cfg->patch, F = (double)cfg->mlp_ratio * D;
    const double T = (double)(H / cfg->patch) * (W / cfg->patch), Lt = L, S = T + Lt;
    const double Po = p * p * cfg->out_channels;
    double macs = T * (cfg->in_channels * p * p) * D;                  /* pos_embed.proj */
    macs += cfg->freq_dim * D + D * D;                                 /* timestep_embedder */
    macs += cfg->pooled_projection_dim * D + D * D;                    /* text_embedder */
    macs += Lt * cfg->joint_attention_dim * D;                         /* context_embedder */
    for (int i = 0; i < cfg->depth; i++) {
        const int pre_only = i == cfg->depth - 1;
        macs += 6.0 * D * D + (pre_only ? 2.0 : 6.0) * D * D;          /* norm1, norm1_context */
        macs += 3.0 * S * D * D;                                       /* q, k, v of both streams */
        macs += 2.0 * S * S * D;                                       /* QK^T and PV over all heads */
        macs += T * D * D + (pre_only ? 0.0 : Lt * D * D);             /* to_out.0, to_add_out */
        macs += 2.0 * T * D * F + (pre_only ? 0.0 : 2.0 * Lt * D * F); /* ff, ff_context */
        if (i < cfg->dual_attention_layers)                            /* MMDiT-X: norm1's 3 more */
            macs += 3.0 * D * D + 4.0 * T * D * D + 2.0 * T * T * D;   /* chunks; attn2 over T */
    }
    macs += 2.0 * D * D + T * D * Po;                                  /* norm_out, proj_out */
    return macs;
}

/* ---- the family's ops (family_ops.h) ----------------------------------------------------- */

/* The preset with depth > 0 replacing its block count (the last block stays context_pre_only). */
static rp_status sd3_config(const char *model, int depth, rp_sd3_config *c, rp_error *err) {
    RP_TRY(rp_sd3_preset(model, c, err));
    if (depth > 0) c->depth = depth;
    return RP_OK;
}

static void sd3_facts_of(const rp_sd3_config *c, rp_model_facts *f) {
    memset(f, 0, sizeof *f);
    f->heads = c->heads;
    f->blocks = c->depth;
    f->patch = c->patch;
    f->latent_c = c->in_channels;
    f->out_c = c->out_channels;
    f->native = c->sample_size;
    f->pos_max = c->pos_embed_max_size;
    f->Dctx = c->joint_attention_dim;
    f->Dpool = c->pooled_projection_dim;
}

static rp_status sd3_ops_specs(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err) {
    rp_sd3_config c;
    (void)single_depth;
    RP_TRY(sd3_config(model, depth, &c, err));
    rp_sd3_param_specs(&c, l);
    return RP_OK;
}

static rp_status sd3_ops_facts(const char *model, int depth, int single_depth, rp_model_facts *f, rp_error *err) {
    rp_sd3_config c;
    (void)single_depth;
    RP_TRY(sd3_config(model, depth, &c, err));
    sd3_facts_of(&c, f);
    return RP_OK;
}

static rp_status sd3_ops_load(const char *model, int depth, int single_depth, const rp_st_file *f, rp_model *out,
                              rp_error *err) {
    rp_sd3_config c;
    (void)single_depth;
    RP_TRY(sd3_config(model, depth, &c, err));
    assert(c.out_channels == c.in_channels); /* the velocity lives in the latent space */
    rp_sd3 *m = NULL;
    RP_TRY(rp_sd3_load(&c, f, &m, err));
    out->impl = m;
    sd3_facts_of(&c, &out->facts);
    return RP_OK;
}

/* diffusers' SD3 pipeline passes no text mask and ignores any guidance scale input */
static rp_status sd3_ops_forward(const rp_model *m, const rp_ctx *ctx, float *out, const rp_model_input *in,
                                 rp_error *err) {
    return rp_sd3_forward(m->impl, ctx, out, in->x, in->t, in->context, NULL, in->pooled, in->B, in->L, in->h, in->w,
                          err);
}

static void sd3_ops_free(rp_model *m) {
    rp_sd3_free(m->impl);
    m->impl = NULL;
}

static double sd3_ops_macs(const rp_model *m, int L, int h, int w) { return rp_sd3_macs(rp_sd3_cfg(m->impl), L, h, w); }

/* StableDiffusion3Pipeline: the static shift 3 */
static rp_status sd3_ops_schedule(rp_flow_schedule *s, int steps, int h, int w, const rp_model_facts *f,
                                  rp_error *err) {
    (void)h, (void)w, (void)f;
    return rp_flow_schedule_sd3(s, steps, RP_FLOW_SD3_SHIFT, err);
}

const rp_family_ops rp_sd3_family = {
    .family = RP_FAMILY_SD3, .label = "SD3",
    .presets = "sd3-tiny sd3-digits sd3-medium sd3.5-large sd3.5-medium sd3.5-medium-tiny",
    .denoiser = 1, .cond = RP_COND_TEXT, .guidance = RP_GUIDE_CFG, .takes_depth = 1,
    .param_specs = sd3_ops_specs, .facts = sd3_ops_facts, .load = sd3_ops_load, .forward = sd3_ops_forward,
    .free = sd3_ops_free, .macs = sd3_ops_macs, .schedule = sd3_ops_schedule, .model_t = rp_flow_sd3_model_t,
};
