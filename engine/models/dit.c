/* dit.c — DiT forward (Peebles & Xie; facebookresearch/DiT models.py) over plain float buffers.
 *
 * Structure, as upstream:
 *   x_embedder   patchify (c, py, px order) + linear with proj.weight viewed (C, Cin*p*p), + pos_embed
 *   t_embedder   mlp.2(silu(mlp.0(timestep_embedding(t, 256))))   (cos first, max_period 10000)
 *   y_embedder   embedding_table[y]; y == num_classes is the null (CFG) class
 *   c = t_emb + y_emb
 *   block        mod = adaLN_modulation.1(silu(c)) -> shift_msa, scale_msa, gate_msa,
 *                                                     shift_mlp, scale_mlp, gate_mlp
 *                x += gate_msa * attn(LN(x) * (1 + scale_msa) + shift_msa)
 *                x += gate_mlp * mlp(LN(x) * (1 + scale_mlp) + shift_mlp)
 *                attn = timm Attention (qkv -> (B, T, 3, H, D), scale D^-0.5, proj)
 *                mlp  = fc2(gelu_tanh(fc1(x)))
 *   final_layer  mod = adaLN_modulation.1(silu(c)) -> shift, scale;
 *                linear(LN(x) * (1 + scale) + shift), then unpatchify ((py, px, c) order)
 * LayerNorms: eps 1e-6, no affine.
 *
 * Synthetic init rules (rp_dit_param_specs; these drive `repro weights` and the
 * weights cache, so a change here needs RP_SYNTHETIC_INIT_VERSION bumped):
 *   linear and patch-embed conv weights   RP_INIT_FANIN  scale 1    (unit-variance outputs)
 *   every bias                            RP_INIT_NORMAL 0.02
 *   adaLN_modulation.1.weight             RP_INIT_FANIN  scale 0.2  — upstream zero-inits these,
 *                                         which would make every block the identity and the
 *                                         test blind; small non-zero keeps gates ~0.1
 *   y_embedder.embedding_table.weight     RP_INIT_NORMAL 1.0
 *   pos_embed                             RP_INIT_SINCOS_2D (the fixed table upstream uses)
 *
 * Sequence parallelism (ctx->par, engine/parallel/parallel.h): the patch embedding and
 * pos_embed run on all T tokens, then this rank keeps its slice [t0, t0 + Tl); the
 * blocks run on the slice with rp_par_attention; the final layer's tokens are gathered
 * back before unpatchify. Trace records name each token's global index, so rank 0
 * records the single-rank layout. Without ctx->par, Tl = T and every call is the plain
 * single-rank one.
 *
 * Memory: parameters live in one allocation (rp_params_load); each forward call
 * makes one activation allocation sized from B and frees it before returning. */
#include "dit.h"

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

typedef struct dit_block {
    rp_linear_w qkv;  /* (3C, C) */
    rp_linear_w proj; /* (C, C) */
    rp_linear_w fc1;  /* (M, C), M = mlp_ratio * C */
    rp_linear_w fc2;  /* (C, M) */
    rp_linear_w ada;  /* (6C, C) */
} dit_block;

struct rp_dit {
    rp_dit_config cfg;
    float *params;            /* every parameter, one allocation */
    size_t n_params;          /* floats in params (the block a device mirrors) */
    const float *pos_embed;   /* (1, T, C) */
    rp_linear_w x_embed;      /* conv weight (C, Cin, p, p) viewed as (C, Cin*p*p) */
    rp_linear_w t_mlp0;       /* (C, freq_dim) */
    rp_linear_w t_mlp2;       /* (C, C) */
    const float *y_table;     /* (num_classes + 1, C) */
    dit_block *blocks;        /* (depth) */
    rp_linear_w final_linear; /* (p*p*Cout, C) */
    rp_linear_w final_ada;    /* (2C, C) */
};

/* ---- presets ---------------------------------------------------------------- */

typedef struct dit_preset {
    const char *name;
    int input_size, patch, in_channels, hidden, depth, heads;
    int num_classes; /* ImageNet's 1000, or the digits' 10 */
} dit_preset;

static const dit_preset PRESETS[] = {
    {"dit-tiny", 16, 2, 4, 96, 4, 4, 1000},          /* CI-sized; same code path as XL */
    /* trained on the ten digits (tests/reference/train/train_digits.py; weights shipped in
     * engine/models/digits/): vae-digits' 8x8 latents, 16 tokens */
    {"dit-digits", 8, 2, 4, 96, 4, 4, 10},
    /* DiT-XL/2 widths at 128x128 (latent 16, 64 tokens): DiT(input_size=16); no released
     * checkpoint, the CPU-sized DiT-XL/2 shape of the scenarios */
    {"dit-xl-2-128", 16, 2, 4, 1152, 28, 16, 1000},
    {"dit-xl-2-256", 32, 2, 4, 1152, 28, 16, 1000}, /* DiT-XL/2 at 256x256 (latent 32) */
    {"dit-xl-2-512", 64, 2, 4, 1152, 28, 16, 1000}, /* DiT-XL/2 at 512x512 (latent 64) */
};

rp_status rp_dit_preset(const char *name, rp_dit_config *cfg, rp_error *err) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof *PRESETS; i++) {
        const dit_preset *p = &PRESETS[i];
        if (strcmp(name, p->name) != 0) continue;
        memset(cfg, 0, sizeof *cfg);
        snprintf(cfg->preset, sizeof cfg->preset, "%s", p->name);
        cfg->input_size = p->input_size;
        cfg->patch = p->patch;
        cfg->in_channels = p->in_channels;
        cfg->hidden = p->hidden;
        cfg->depth = p->depth;
        cfg->heads = p->heads;
        cfg->mlp_ratio = 4;
        cfg->num_classes = p->num_classes;
        cfg->learn_sigma = 1;
        cfg->freq_dim = 256;
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_NOT_FOUND,
                   "unknown DiT preset '%s' (known: dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 dit-xl-2-512)", name);
}

static int out_channels(const rp_dit_config *cfg) {
    return cfg->learn_sigma ? 2 * cfg->in_channels : cfg->in_channels;
}

/* Rejects configs the forward cannot run (a hand-edited or overridden preset). */
static rp_status check_cfg(const rp_dit_config *cfg, rp_error *err) {
    if (cfg->input_size <= 0 || cfg->patch <= 0 || cfg->input_size % cfg->patch != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "DiT '%s': input_size %d is not a positive multiple of patch %d",
                       cfg->preset, cfg->input_size, cfg->patch);
    if (cfg->hidden <= 0 || cfg->heads <= 0 || cfg->hidden % cfg->heads != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "DiT '%s': hidden %d is not divisible by heads %d", cfg->preset,
                       cfg->hidden, cfg->heads);
    if (cfg->hidden % 4 != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "DiT '%s': hidden %d must be divisible by 4 (2-D sin-cos pos_embed)",
                       cfg->preset, cfg->hidden);
    if (cfg->depth <= 0 || cfg->in_channels <= 0 || cfg->mlp_ratio <= 0 || cfg->num_classes <= 0 ||
        cfg->freq_dim <= 1)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "DiT '%s': depth %d, in_channels %d, mlp_ratio %d, num_classes %d must be > 0 and "
                       "freq_dim %d > 1",
                       cfg->preset, cfg->depth, cfg->in_channels, cfg->mlp_ratio, cfg->num_classes,
                       cfg->freq_dim);
    return RP_OK;
}

/* ---- parameter specs (upstream state_dict order) ------------------------------ */

void rp_dit_param_specs(const rp_dit_config *cfg, rp_param_list *l) {
    const int64_t C = cfg->hidden, p = cfg->patch, Cin = cfg->in_channels;
    const int64_t g = cfg->input_size / cfg->patch, T = g * g, M = (int64_t)cfg->mlp_ratio * C;
    const int64_t Po = p * p * out_channels(cfg);
    char pre[96];
    /* Module.state_dict() lists a module's own parameters before its children's,
     * so pos_embed (a DiT-level Parameter) comes first. */
    rp_params_add(l, RP_INIT_SINCOS_2D, 1.0f, 3, (int64_t[]){1, T, C}, "pos_embed");
    rp_params_add(l, RP_INIT_FANIN, 1.0f, 4, (int64_t[]){C, Cin, p, p}, "x_embedder.proj.weight");
    rp_params_add(l, RP_INIT_NORMAL, 0.02f, 1, (int64_t[]){C}, "x_embedder.proj.bias");
    rp_params_add_linear(l, "t_embedder.mlp.0", C, cfg->freq_dim, 1.0f);
    rp_params_add_linear(l, "t_embedder.mlp.2", C, C, 1.0f);
    rp_params_add(l, RP_INIT_NORMAL, 1.0f, 2, (int64_t[]){cfg->num_classes + 1, C},
                  "y_embedder.embedding_table.weight");
    for (int i = 0; i < cfg->depth; i++) {
        snprintf(pre, sizeof pre, "blocks.%d.attn.qkv", i);
        rp_params_add_linear(l, pre, 3 * C, C, 1.0f);
        snprintf(pre, sizeof pre, "blocks.%d.attn.proj", i);
        rp_params_add_linear(l, pre, C, C, 1.0f);
        snprintf(pre, sizeof pre, "blocks.%d.mlp.fc1", i);
        rp_params_add_linear(l, pre, M, C, 1.0f);
        snprintf(pre, sizeof pre, "blocks.%d.mlp.fc2", i);
        rp_params_add_linear(l, pre, C, M, 1.0f);
        snprintf(pre, sizeof pre, "blocks.%d.adaLN_modulation.1", i);
        rp_params_add_linear(l, pre, 6 * C, C, 0.2f);
    }
    rp_params_add_linear(l, "final_layer.linear", Po, C, 1.0f);
    rp_params_add_linear(l, "final_layer.adaLN_modulation.1", 2 * C, C, 0.2f);
}

/* ---- loading -------------------------------------------------------------------- */

rp_status rp_dit_load(const rp_dit_config *cfg, const rp_st_file *f, rp_dit **out, rp_error *err) {
    RP_TRY(check_cfg(cfg, err));
    const int C = cfg->hidden, p = cfg->patch, Cin = cfg->in_channels, M = cfg->mlp_ratio * cfg->hidden;
    const int Po = p * p * out_channels(cfg);
    rp_dit *m = calloc(1, sizeof *m);
    if (!m || !(m->blocks = calloc((size_t)cfg->depth, sizeof *m->blocks))) {
        free(m);
        return RP_FAIL(err, RP_ERR_NOMEM, "DiT '%s': out of memory for the model description", cfg->preset);
    }
    m->cfg = *cfg;
    rp_param_cursor c = {.prefix = ""};
    rp_dit_param_specs(cfg, &c.l);
    rp_status st = rp_param_cursor_load(&c, f, &m->params, &m->n_params, err);
    if (st != RP_OK) {
        rp_dit_free(m);
        return st;
    }
    char pre[96];
    m->pos_embed = rp_param_take(&c, "pos_embed");
    m->x_embed = rp_param_take_linear(&c, "x_embedder.proj", Cin * p * p, C);
    m->t_mlp0 = rp_param_take_linear(&c, "t_embedder.mlp.0", cfg->freq_dim, C);
    m->t_mlp2 = rp_param_take_linear(&c, "t_embedder.mlp.2", C, C);
    m->y_table = rp_param_take(&c, "y_embedder.embedding_table.weight");
    for (int i = 0; i < cfg->depth; i++) {
        dit_block *b = &m->blocks[i];
        snprintf(pre, sizeof pre, "blocks.%d.attn.qkv", i);
        b->qkv = rp_param_take_linear(&c, pre, C, 3 * C);
        snprintf(pre, sizeof pre, "blocks.%d.attn.proj", i);
        b->proj = rp_param_take_linear(&c, pre, C, C);
        snprintf(pre, sizeof pre, "blocks.%d.mlp.fc1", i);
        b->fc1 = rp_param_take_linear(&c, pre, C, M);
        snprintf(pre, sizeof pre, "blocks.%d.mlp.fc2", i);
        b->fc2 = rp_param_take_linear(&c, pre, M, C);
        snprintf(pre, sizeof pre, "blocks.%d.adaLN_modulation.1", i);
        b->ada = rp_param_take_linear(&c, pre, C, 6 * C);
    }
    m->final_linear = rp_param_take_linear(&c, "final_layer.linear", C, Po);
    m->final_ada = rp_param_take_linear(&c, "final_layer.adaLN_modulation.1", C, 2 * C);
    rp_param_cursor_end(&c);
    *out = m;
    return RP_OK;
}

void rp_dit_free(rp_dit *m) {
    if (!m) return;
    free(m->params);
    free(m->blocks);
    free(m);
}

const rp_dit_config *rp_dit_cfg(const rp_dit *m) { return &m->cfg; }

/* ---- forward ------------------------------------------------------------------- */

rp_status rp_dit_forward(const rp_dit *m, const rp_ctx *ctx, float *out, const float *x,
                         const float *t, const int *y, int B, rp_error *err) {
    assert(m && ctx && out && x && t && y);
    const rp_dit_config *cfg = &m->cfg;
    if (B <= 0) return RP_FAIL(err, RP_ERR_INVALID, "DiT forward: batch %d must be > 0", B);
    for (int b = 0; b < B; b++)
        if (y[b] < 0 || y[b] > cfg->num_classes)
            return RP_FAIL(err, RP_ERR_INVALID,
                           "DiT forward: class id y[%d] = %d outside [0, %d] (%d = null class)", b, y[b],
                           cfg->num_classes, cfg->num_classes);

    const int S = cfg->input_size, p = cfg->patch, Cin = cfg->in_channels, Cout = out_channels(cfg);
    const int C = cfg->hidden, H = cfg->heads, D = C / H, F = cfg->freq_dim, M = cfg->mlp_ratio * C;
    const int g = S / p, T = g * g, P = Cin * p * p, Po = p * p * Cout;
    const size_t BT = (size_t)B * T;
    int t0, Tl; /* this rank's tokens [t0, t0 + Tl) (sequence parallelism; else 0, T) */
    RP_TRY(rp_par_shard(ctx, T, &t0, &Tl, err));
    const size_t BTl = (size_t)B * Tl;
    /* The attention scratch (q, k, v, heads-out: 4 x (B, T, C)) is dead while the
     * MLP hidden (B, T, M) is live and vice versa, so they share one region. */
    const size_t n_shared = BT * (size_t)(M > 4 * C ? M : 4 * C);

    const size_t n_io = (size_t)B * Cin * S * S   /* xin */
                        + (size_t)B * Cout * S * S  /* outd */
                        + (size_t)B;                /* tdev */
    const size_t n_total = BT * P            /* patches */
                           + BT * C          /* xs */
                           + BT * C          /* h */
                           + BT * C          /* ys */
                           + BT * 3 * C      /* qkv */
                           + n_shared        /* q, k, v, att | mh */
                           + BT * Po         /* fin */
                           + (size_t)B * F   /* tfreq */
                           + (size_t)B * C * 5 /* th, temb, yemb, cvec, sc */
                           + (size_t)B * 6 * C /* mod */
                           + (ctx->dev ? n_io : 0);
    /* On a device (engine/device.h) every buffer below is device memory and the
     * parameters are read through their mirror; without one this is the CPU path. */
    RP_TRY(rp_d_mirror(ctx, m->params, m->n_params * sizeof(float), err));
    float *mem = rp_d_alloc(ctx, n_total, err);
    int *tok = ctx->par ? malloc(sizeof(int) * Tl) : NULL; /* (Tl) global token index, for the trace */
    if (!mem || (ctx->par && !tok)) {
        rp_d_free(ctx, mem);
        free(tok);
        rp_d_check(ctx, NULL);
        return RP_FAIL(err, RP_ERR_NOMEM, "DiT forward: cannot allocate %.1f MiB of activations for batch %d",
                       n_total * sizeof(float) / 1048576.0, B);
    }
    for (int j = 0; tok && j < Tl; j++) tok[j] = t0 + j;
    float *cur = mem;
    float *patches = cur; cur += BT * P;       /* (B, T, Cin*p*p) */
    float *xs = cur;      cur += BT * C;       /* (B, T, C) residual stream; (B, Tl, C) after the embedding */
    float *h = cur;       cur += BT * C;       /* (B, T, C) normed + modulated input of attn / mlp */
    float *ys = cur;      cur += BT * C;       /* (B, T, C) attn or mlp output, before the gate */
    float *qkv = cur;     cur += BT * 3 * C;   /* (B, T, 3C) = (B, T, 3, H, D) */
    float *shared = cur;  cur += n_shared;
    float *q = shared;                         /* (B, H, T, D) */
    float *k = shared + BT * C;                /* (B, H, T, D) */
    float *v = shared + 2 * BT * C;            /* (B, H, T, D) */
    float *att = shared + 3 * BT * C;          /* (B, H, T, D) */
    float *mh = shared;                        /* (B, T, M) MLP hidden */
    float *fin = cur;     cur += BT * Po;      /* (B, T, p*p*Cout) final tokens, (py, px, c) order */
    float *tfreq = cur;   cur += (size_t)B * F; /* (B, F) */
    float *th = cur;      cur += (size_t)B * C; /* (B, C) t_embedder hidden */
    float *temb = cur;    cur += (size_t)B * C; /* (B, C) */
    float *yemb = cur;    cur += (size_t)B * C; /* (B, C) */
    float *cvec = cur;    cur += (size_t)B * C; /* (B, C) conditioning c */
    float *sc = cur;      cur += (size_t)B * C; /* (B, C) silu(c), input of every adaLN */
    float *mod = cur;     cur += (size_t)B * 6 * C; /* (B, 6C) or (B, 2C) in the final layer */
    const float *xin = x, *tin = t; /* (B, Cin, S, S), (B): the inputs where the ops read them */
    float *outd = out;              /* (B, Cout, S, S): where unpatchify writes */
    if (ctx->dev) {
        float *xd = cur;  cur += (size_t)B * Cin * S * S;
        outd = cur;       cur += (size_t)B * Cout * S * S;
        float *td = cur;  cur += (size_t)B;
        rp_d_upload(ctx, xd, x, (size_t)B * Cin * S * S);
        rp_d_upload(ctx, td, t, (size_t)B);
        xin = xd;
        tin = td;
    }
    assert((size_t)(cur - mem) == n_total);

    rp_status st = RP_OK;
    char name[96];

    /* x_embedder: Conv2d(k = s = p) == patchify + linear; then + pos_embed. Under sequence
     * parallelism the whole sequence is embedded into h, then this rank's slice copied. */
    float *xe = Tl < T ? h : xs; /* (B, T, C) */
    rp_d_patchify(ctx, patches, xin, B, Cin, S, S, p);
    rp_d_linear(ctx, xe, patches, &m->x_embed, (int)BT);
    rp_d_add_bcast(ctx, xe, m->pos_embed, B, (size_t)T * C);
    rp_par_trace(ctx, "x_embedder", xe, B, T, C, NULL, T);
    if (Tl < T) /* keep this rank's slice: item b's rows [t0, t0 + Tl) to xs[b] */
        for (int b = 0; b < B; b++)
            rp_d_copy(ctx, xs + (size_t)b * Tl * C, xe + ((size_t)b * T + t0) * C, (size_t)Tl * C);

    /* t_embedder */
    rp_timestep_embedder(ctx, temb, th, tfreq, tin, B, F, &m->t_mlp0, &m->t_mlp2);
    rp_par_trace(ctx, "t_embedder", temb, B, 1, C, NULL, 1);

    /* y_embedder: a table lookup (labels are given already dropped to the null class). */
    for (int b = 0; b < B; b++) rp_d_copy(ctx, yemb + (size_t)b * C, m->y_table + (size_t)y[b] * C, (size_t)C);
    rp_par_trace(ctx, "y_embedder", yemb, B, 1, C, NULL, 1);

    /* c = t + y; every adaLN_modulation starts with SiLU(c), computed once here. */
    rp_d_copy(ctx, cvec, temb, (size_t)B * C);
    rp_d_add(ctx, cvec, yemb, (size_t)B * C);
    rp_d_silu(ctx, sc, cvec, (size_t)B * C);

    const float scale = (float)(1.0 / sqrt((double)D)); /* timm: head_dim ** -0.5 */
    /* the MLP's LayerNorm (norm2): 1e-6 as the others (norm-eps-rank: 1e-5 on one rank) */
    const float mlp_ln_eps = rp_par_norm_eps(ctx, 1e-6f);
    const int ms = 6 * C;                                /* row stride of mod */
    int ba, bb; /* the blocks this rank runs (all, unless a pipeline hook owns a range) */
    rp_par_block_range(ctx, cfg->depth, &ba, &bb);
    st = rp_par_stream(ctx, RP_PAR_STREAM_ENTER, ba, xs, BTl, NULL, 0, C, err);
    if (st != RP_OK) goto done;
    for (int i = ba; i < bb; i++) {
        const dit_block *blk = &m->blocks[i];
        /* mod (B, 6C) = [shift_msa | scale_msa | gate_msa | shift_mlp | scale_mlp | gate_mlp] */
        rp_d_linear(ctx, mod, sc, &blk->ada, B);

        /* attention branch */
        rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, 1e-6f);
        rp_d_modulate(ctx, h, mod + 0 * C, mod + 1 * C, ms, B, Tl, C);
        rp_d_linear(ctx, qkv, h, &blk->qkv, (int)BTl);
        rp_d_split_qkv_heads(ctx, q, k, v, qkv, B, Tl, H, D);
        st = rp_par_attention(ctx, i, att, q, k, v, NULL, B, H, Tl, 0, 0, D, scale, err);
        if (st != RP_OK) goto done;
        rp_d_from_heads(ctx, h, C, att, B, Tl, 0, Tl, H, D); /* h (B, Tl, C) reused: its content is consumed */
        rp_d_linear(ctx, ys, h, &blk->proj, (int)BTl);
        snprintf(name, sizeof name, "blocks.%d.attn", i);
        rp_par_trace(ctx, name, ys, B, Tl, C, tok, T);
        rp_d_gated_add(ctx, xs, mod + 2 * C, ms, ys, B, Tl, C);

        /* MLP branch */
        rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, mlp_ln_eps);
        rp_d_modulate(ctx, h, mod + 3 * C, mod + 4 * C, ms, B, Tl, C);
        rp_ctx mlp_tmp;
        const rp_ctx *mc = rp_par_mlp_ctx(ctx, i, &mlp_tmp); /* ctx (bf16-layer-rank: bf16 on one rank) */
        rp_d_linear(mc, mh, h, &blk->fc1, (int)BTl);
        rp_par_mlp_act_input(ctx, i, mh, BTl * M); /* act-bf16-rank */
        rp_d_gelu_tanh(ctx, mh, mh, BTl * M);
        rp_d_linear(mc, ys, mh, &blk->fc2, (int)BTl);
        snprintf(name, sizeof name, "blocks.%d.mlp", i);
        rp_par_trace(ctx, name, ys, B, Tl, C, tok, T);
        rp_d_gated_add(ctx, xs, mod + 5 * C, ms, ys, B, Tl, C);

        snprintf(name, sizeof name, "blocks.%d", i);
        rp_par_trace(ctx, name, xs, B, Tl, C, tok, T);
    }
    st = rp_par_stream(ctx, RP_PAR_STREAM_LEAVE, bb - 1, xs, BTl, NULL, 0, C, err);
    if (st != RP_OK || bb < cfg->depth) goto done; /* a later pipeline stage finishes the forward */

    /* final_layer: mod (B, 2C) = [shift | scale] */
    rp_d_linear(ctx, mod, sc, &m->final_ada, B);
    rp_d_layernorm(ctx, h, xs, NULL, NULL, (int)BTl, C, 1e-6f);
    rp_d_modulate(ctx, h, mod, mod + C, 2 * C, B, Tl, C);
    rp_d_linear(ctx, fin, h, &m->final_linear, (int)BTl);
    if (Tl < T && (st = rp_par_gather_tokens(ctx, fin, fin, B, T, Po, t0, Tl, err)) != RP_OK) goto done;
    rp_par_trace(ctx, "final_layer", fin, B, T, Po, NULL, T);
    rp_d_unpatchify(ctx, outd, fin, B, Cout, S, S, p);
    if (ctx->dev) rp_d_download(ctx, out, outd, (size_t)B * Cout * S * S);

done:
    st = rp_par_forward_end(ctx, st, err);
    rp_d_free(ctx, mem);
    free(tok);
    return st;
}

/* ---- cost -------------------------------------------------------------------------- */

double rp_dit_macs(const rp_dit_config *cfg) {
    const double C = cfg->hidden, p = cfg->patch, Cin = cfg->in_channels;
    const double g = cfg->input_size / cfg->patch, T = g * g, M = (double)cfg->mlp_ratio * C;
    const double Po = p * p * out_channels(cfg);
    double macs = T * (Cin * p * p) * C;               /* x_embedder */
    macs += cfg->freq_dim * C + C * C;                 /* t_embedder */
    double block = 6.0 * C * C                         /* adaLN_modulation */
                   + T * C * 3.0 * C                   /* qkv */
                   + 2.0 * T * T * C                   /* QK^T and PV over all heads */
                   + T * C * C                         /* proj */
                   + 2.0 * T * C * M;                  /* fc1 + fc2 */
    macs += cfg->depth * block;
    macs += 2.0 * C * C + T * C * Po;                  /* final adaLN + linear */
    return macs;
}

/* ---- the family's ops (family_ops.h) ----------------------------------------------------- */

/* The preset with depth > 0 replacing its block count. */
static rp_status dit_config(const char *model, int depth, rp_dit_config *c, rp_error *err) {
    RP_TRY(rp_dit_preset(model, c, err));
    if (depth > 0) c->depth = depth;
    return RP_OK;
}

static void dit_facts_of(const rp_dit_config *c, rp_model_facts *f) {
    memset(f, 0, sizeof *f);
    f->heads = c->heads;
    f->blocks = c->depth;
    f->patch = c->patch;
    f->latent_c = c->in_channels;
    f->out_c = out_channels(c);
    f->native = c->input_size;
    f->num_classes = c->num_classes;
}

static rp_status dit_ops_specs(const char *model, int depth, int single_depth, rp_param_list *l, rp_error *err) {
    rp_dit_config c;
    (void)single_depth;
    RP_TRY(dit_config(model, depth, &c, err));
    rp_dit_param_specs(&c, l);
    return RP_OK;
}

static rp_status dit_ops_facts(const char *model, int depth, int single_depth, rp_model_facts *f, rp_error *err) {
    rp_dit_config c;
    (void)single_depth;
    RP_TRY(dit_config(model, depth, &c, err));
    dit_facts_of(&c, f);
    return RP_OK;
}

static rp_status dit_ops_load(const char *model, int depth, int single_depth, const rp_st_file *f, rp_model *out,
                              rp_error *err) {
    rp_dit_config c;
    (void)single_depth;
    RP_TRY(dit_config(model, depth, &c, err));
    rp_dit *m = NULL;
    RP_TRY(rp_dit_load(&c, f, &m, err));
    out->impl = m;
    dit_facts_of(&c, &out->facts);
    return RP_OK;
}

static rp_status dit_ops_forward(const rp_model *m, const rp_ctx *ctx, float *out, const rp_model_input *in,
                                 rp_error *err) {
    return rp_dit_forward(m->impl, ctx, out, in->x, in->t, in->y, in->B, err);
}

static void dit_ops_free(rp_model *m) {
    rp_dit_free(m->impl);
    m->impl = NULL;
}

static double dit_ops_macs(const rp_model *m, int L, int h, int w) {
    (void)L, (void)h, (void)w; /* the preset fixes the size; no text */
    return rp_dit_macs(rp_dit_cfg(m->impl));
}

const rp_family_ops rp_dit_family = {
    .family = RP_FAMILY_DIT, .label = "DiT",
    .presets = "dit-tiny dit-digits dit-xl-2-128 dit-xl-2-256 dit-xl-2-512",
    .denoiser = 1, .cond = RP_COND_CLASS, .guidance = RP_GUIDE_CFG, .takes_depth = 1,
    .param_specs = dit_ops_specs, .facts = dit_ops_facts, .load = dit_ops_load, .forward = dit_ops_forward,
    .free = dit_ops_free, .macs = dit_ops_macs,
};
