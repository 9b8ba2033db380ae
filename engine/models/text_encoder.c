/* text_encoder.c — the byte-level prompt encoder (see text_encoder.h) over plain float buffers.
 *
 * Synthetic init rules (rp_te_param_specs; like dit.c, they drive `repro weights`
 * and the weights cache, so a change needs RP_SYNTHETIC_INIT_VERSION bumped):
 *   linear weights (qkv, proj, fc1, fc2, proj_*)   RP_INIT_FANIN      scale 1 (unit-variance outputs)
 *   every linear and LayerNorm bias                RP_INIT_NORMAL     0.02 (linear) / 0.1 (LayerNorm)
 *   token_embedding, position_embedding            RP_INIT_NORMAL     1
 *   LayerNorm weights                              RP_INIT_ONE_NORMAL 0.1 — not exactly 1, so a
 *                                                  wiring error in the affine part shows in the test
 *
 * Memory: parameters live in one allocation (rp_params_load); each encode call
 * makes one activation allocation sized for one prompt (prompts run one at a
 * time, see rp_te_encode) and frees it before returning. */
#include "text_encoder.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../attention/attention.h"
#include "../ops.h"
#include "../parallel/parallel.h"

#define TE_LN_EPS 1e-5f

typedef struct te_layer {
    const float *ln1_w, *ln1_b; /* (D) */
    rp_linear_w qkv;            /* (3D, D) */
    rp_linear_w proj;           /* (D, D) */
    const float *ln2_w, *ln2_b; /* (D) */
    rp_linear_w fc1;            /* (M, D) */
    rp_linear_w fc2;            /* (D, M) */
} te_layer;

struct rp_te {
    rp_te_config cfg;
    float *params;               /* every parameter, one allocation */
    const float *tok_emb;        /* (vocab, D) */
    const float *pos_emb;        /* (max_len, D) */
    te_layer *layers;            /* (depth) */
    const float *lnf_w, *lnf_b;  /* (D) */
    rp_linear_w proj_context;    /* (context_dim, D) */
    rp_linear_w proj_pooled;     /* (pooled_dim, D) */
};

/* ---- presets ---------------------------------------------------------------- */

typedef struct te_preset {
    const char *name;
    int max_len, hidden, depth, heads, context_dim, pooled_dim;
} te_preset;

static const te_preset PRESETS[] = {
    /* CI-sized; its widths are those of the tiny SD3/FLUX presets. */
    {"te-tiny", 32, 64, 2, 2, 64, 64},
    /* te-tiny's shape; its weights are te-tiny's synthetic ones (seed 0) shipped in
     * engine/models/digits/ (weights_cache.h), the encoder sd3-digits was trained on. */
    {"te-digits", 32, 64, 2, 2, 64, 64},
    /* SD3: context width of T5-XXL (4096), pooled = CLIP-L 768 + CLIP-G 1280 = 2048;
     * 77 tokens, CLIP's length. */
    {"te-sd3", 77, 256, 2, 4, 4096, 2048},
    /* FLUX.1-dev: T5 max_sequence_length 512, pooled = CLIP-L 768. One prompt costs
     * ~1.7 GMAC (most of it proj_context over all 512 rows), ~0.1 s on 2 cores, so
     * the real length is kept. */
    {"te-flux", 512, 256, 2, 4, 4096, 768},
};

rp_status rp_te_preset(const char *name, rp_te_config *cfg, rp_error *err) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof *PRESETS; i++) {
        const te_preset *p = &PRESETS[i];
        if (strcmp(name, p->name) != 0) continue;
        memset(cfg, 0, sizeof *cfg);
        snprintf(cfg->preset, sizeof cfg->preset, "%s", p->name);
        cfg->max_len = p->max_len;
        cfg->vocab = RP_TE_VOCAB;
        cfg->hidden = p->hidden;
        cfg->depth = p->depth;
        cfg->heads = p->heads;
        cfg->mlp_ratio = 4;
        cfg->context_dim = p->context_dim;
        cfg->pooled_dim = p->pooled_dim;
        return RP_OK;
    }
    return RP_FAIL(err, RP_ERR_NOT_FOUND, "unknown text-encoder preset '%s' (known: te-tiny te-digits te-sd3 te-flux)",
                   name);
}

/* Rejects configs the forward cannot run (a hand-edited or overridden preset). */
static rp_status check_cfg(const rp_te_config *cfg, rp_error *err) {
    if (cfg->max_len < 2)
        return RP_FAIL(err, RP_ERR_INVALID, "text encoder '%s': max_len %d must be >= 2 (bos and eos)",
                       cfg->preset, cfg->max_len);
    if (cfg->vocab != RP_TE_VOCAB)
        return RP_FAIL(err, RP_ERR_INVALID, "text encoder '%s': vocab %d, the byte tokenizer needs %d",
                       cfg->preset, cfg->vocab, RP_TE_VOCAB);
    if (cfg->hidden <= 0 || cfg->heads <= 0 || cfg->hidden % cfg->heads != 0)
        return RP_FAIL(err, RP_ERR_INVALID, "text encoder '%s': hidden %d is not divisible by heads %d",
                       cfg->preset, cfg->hidden, cfg->heads);
    if (cfg->depth < 0 || cfg->mlp_ratio <= 0 || cfg->context_dim <= 0 || cfg->pooled_dim <= 0)
        return RP_FAIL(err, RP_ERR_INVALID,
                       "text encoder '%s': depth %d must be >= 0 and mlp_ratio %d, context_dim %d, "
                       "pooled_dim %d > 0",
                       cfg->preset, cfg->depth, cfg->mlp_ratio, cfg->context_dim, cfg->pooled_dim);
    return RP_OK;
}

/* ---- tokenizer ----------------------------------------------------------------- */

int rp_te_tokenize(const char *prompt, int max_len, int32_t *tokens, uint8_t *mask) {
    assert(max_len >= 2 && tokens);
    const unsigned char *s = (const unsigned char *)(prompt ? prompt : "");
    const size_t len = strlen((const char *)s);
    /* Room for max_len - 2 bytes between bos and eos; the tail is dropped. */
    const int nb = len > (size_t)(max_len - 2) ? max_len - 2 : (int)len;
    tokens[0] = RP_TE_BOS;
    for (int i = 0; i < nb; i++) tokens[1 + i] = RP_TE_BYTE0 + (int32_t)s[i];
    tokens[1 + nb] = RP_TE_EOS;
    for (int i = 2 + nb; i < max_len; i++) tokens[i] = RP_TE_PAD;
    if (mask)
        for (int i = 0; i < max_len; i++) mask[i] = i < 2 + nb;
    return 2 + nb;
}

/* ---- parameter specs ------------------------------------------------------------ */

/* Appends "text_encoder.<prefix>.weight" (out, in) and ".bias" (out). */
static void linear_spec(rp_param_list *l, const char *prefix, int64_t out, int64_t in) {
    char name[112];
    snprintf(name, sizeof name, "text_encoder.%s", prefix);
    rp_params_add_linear(l, name, out, in, 1.0f);
}

static void ln_spec(rp_param_list *l, const char *prefix, int64_t D) {
    char name[112];
    snprintf(name, sizeof name, "text_encoder.%s", prefix);
    rp_params_add_norm(l, name, D);
    rp_params_add(l, RP_INIT_NORMAL, 0.1f, 1, (int64_t[]){D}, "%s.bias", name);
}

void rp_te_param_specs(const rp_te_config *cfg, rp_param_list *l) {
    const int64_t D = cfg->hidden, M = (int64_t)cfg->mlp_ratio * D;
    char pre[96];
    rp_params_add(l, RP_INIT_NORMAL, 1.0f, 2, (int64_t[]){cfg->vocab, D}, "text_encoder.token_embedding.weight");
    rp_params_add(l, RP_INIT_NORMAL, 1.0f, 2, (int64_t[]){cfg->max_len, D},
                  "text_encoder.position_embedding.weight");
    for (int i = 0; i < cfg->depth; i++) {
        snprintf(pre, sizeof pre, "layers.%d.ln1", i);
        ln_spec(l, pre, D);
        snprintf(pre, sizeof pre, "layers.%d.attn.qkv", i);
        linear_spec(l, pre, 3 * D, D);
        snprintf(pre, sizeof pre, "layers.%d.attn.proj", i);
        linear_spec(l, pre, D, D);
        snprintf(pre, sizeof pre, "layers.%d.ln2", i);
        ln_spec(l, pre, D);
        snprintf(pre, sizeof pre, "layers.%d.mlp.fc1", i);
        linear_spec(l, pre, M, D);
        snprintf(pre, sizeof pre, "layers.%d.mlp.fc2", i);
        linear_spec(l, pre, D, M);
    }
    ln_spec(l, "final_ln", D);
    linear_spec(l, "proj_context", cfg->context_dim, D);
    linear_spec(l, "proj_pooled", cfg->pooled_dim, D);
}

/* ---- loading -------------------------------------------------------------------- */

rp_status rp_te_load(const rp_te_config *cfg, const rp_st_file *f, rp_te **out, rp_error *err) {
    RP_TRY(check_cfg(cfg, err));
    const int D = cfg->hidden, M = cfg->mlp_ratio * cfg->hidden;
    rp_te *m = calloc(1, sizeof *m);
    if (!m || !(m->layers = calloc((size_t)(cfg->depth > 0 ? cfg->depth : 1), sizeof *m->layers))) {
        free(m);
        return RP_FAIL(err, RP_ERR_NOMEM, "text encoder '%s': out of memory for the model description",
                       cfg->preset);
    }
    m->cfg = *cfg;
    rp_param_cursor c = {.prefix = "text_encoder."};
    rp_te_param_specs(cfg, &c.l);
    rp_status st = rp_param_cursor_load(&c, f, &m->params, NULL, err);
    if (st != RP_OK) {
        rp_te_free(m);
        return st;
    }
    char pre[96];
    m->tok_emb = rp_param_take(&c, "token_embedding.weight");
    m->pos_emb = rp_param_take(&c, "position_embedding.weight");
    for (int i = 0; i < cfg->depth; i++) {
        te_layer *ly = &m->layers[i];
        snprintf(pre, sizeof pre, "layers.%d.ln1", i);
        rp_param_take_wb(&c, pre, &ly->ln1_w, &ly->ln1_b);
        snprintf(pre, sizeof pre, "layers.%d.attn.qkv", i);
        ly->qkv = rp_param_take_linear(&c, pre, D, 3 * D);
        snprintf(pre, sizeof pre, "layers.%d.attn.proj", i);
        ly->proj = rp_param_take_linear(&c, pre, D, D);
        snprintf(pre, sizeof pre, "layers.%d.ln2", i);
        rp_param_take_wb(&c, pre, &ly->ln2_w, &ly->ln2_b);
        snprintf(pre, sizeof pre, "layers.%d.mlp.fc1", i);
        ly->fc1 = rp_param_take_linear(&c, pre, D, M);
        snprintf(pre, sizeof pre, "layers.%d.mlp.fc2", i);
        ly->fc2 = rp_param_take_linear(&c, pre, M, D);
    }
    rp_param_take_wb(&c, "final_ln", &m->lnf_w, &m->lnf_b);
    m->proj_context = rp_param_take_linear(&c, "proj_context", D, cfg->context_dim);
    m->proj_pooled = rp_param_take_linear(&c, "proj_pooled", D, cfg->pooled_dim);
    rp_param_cursor_end(&c);
    *out = m;
    return RP_OK;
}

void rp_te_free(rp_te *m) {
    if (!m) return;
    free(m->params);
    free(m->layers);
    free(m);
}

const rp_te_config *rp_te_cfg(const rp_te *m) { return &m->cfg; }

/* ---- forward ------------------------------------------------------------------- */

/* Activations of one prompt: (L, D) rows unless noted. */
typedef struct te_scratch {
    float *xs;     /* (L, D) residual stream */
    float *h;      /* (L, D) LayerNorm output / attention heads merged */
    float *ys;     /* (L, D) branch output before the residual add */
    float *qkv;    /* (L, 3D) = (L, 3, H, Dh) */
    float *q, *k, *v, *att; /* (H, L, Dh) each */
    float *mh;     /* (L, M) MLP hidden; shares memory with q, k, v, att */
    int32_t *tok;  /* (L) */
    uint8_t *mask; /* (L) */
} te_scratch;

/* Encodes one prompt into ctx_out (L, Cc), mask_out (L) or NULL, pooled_out (Pd) or NULL. */
static rp_status encode_one(const rp_te *m, const rp_ctx *ctx, const char *prompt, const te_scratch *w,
                            float *ctx_out, uint8_t *mask_out, float *pooled_out, rp_error *err) {
    const rp_te_config *cfg = &m->cfg;
    const int L = cfg->max_len, D = cfg->hidden, H = cfg->heads, Dh = D / H, M = cfg->mlp_ratio * D;
    const int Cc = cfg->context_dim;

    /* Tokens, then embeddings: x[i] = tok_emb[tok[i]] + pos_emb[i]. */
    const int n = rp_te_tokenize(prompt, L, w->tok, w->mask);
    const int eos = n - 1;
    for (int i = 0; i < L; i++) {
        assert(w->tok[i] >= 0 && w->tok[i] < cfg->vocab);
        const float *te = m->tok_emb + (size_t)w->tok[i] * D, *pe = m->pos_emb + (size_t)i * D;
        float *x = w->xs + (size_t)i * D;
        for (int c = 0; c < D; c++) x[c] = te[c] + pe[c];
    }

    const float scale = (float)(1.0 / sqrt((double)Dh));
    for (int i = 0; i < cfg->depth; i++) {
        const te_layer *ly = &m->layers[i];
        /* attention branch; padded keys are masked, padded queries still run
         * (their rows are discarded at the output) */
        rp_layernorm(w->h, w->xs, ly->ln1_w, ly->ln1_b, L, D, rp_par_te_norm_eps(ctx, TE_LN_EPS));
        rp_linear(ctx, w->qkv, w->h, &ly->qkv, L);
        rp_split_qkv_heads(w->q, w->k, w->v, w->qkv, 1, L, H, Dh);
        RP_TRY(rp_attention(ctx, w->att, w->q, w->k, w->v, w->mask, 1, H, L, L, Dh, scale, err));
        rp_from_heads(w->h, w->att, 1, L, H, Dh); /* h reused: its content is consumed */
        rp_linear(ctx, w->ys, w->h, &ly->proj, L);
        rp_add(w->xs, w->ys, (size_t)L * D);

        /* MLP branch */
        rp_layernorm(w->h, w->xs, ly->ln2_w, ly->ln2_b, L, D, TE_LN_EPS);
        rp_linear(ctx, w->mh, w->h, &ly->fc1, L);
        rp_gelu_tanh(w->mh, w->mh, (size_t)L * M);
        rp_linear(ctx, w->ys, w->mh, &ly->fc2, L);
        rp_add(w->xs, w->ys, (size_t)L * D);
    }
    rp_layernorm(w->h, w->xs, m->lnf_w, m->lnf_b, L, D, TE_LN_EPS);

    /* Per-token context over every row (one GEMM, whatever the prompt's length),
     * then pad rows zeroed so downstream joint attention sees exact zeros there
     * even if it ignores the mask. */
    rp_linear(ctx, ctx_out, w->h, &m->proj_context, L);
    for (int r = n; r < L; r++) memset(ctx_out + (size_t)r * Cc, 0, (size_t)Cc * sizeof(float));
    if (pooled_out) rp_linear(ctx, pooled_out, w->h + (size_t)eos * D, &m->proj_pooled, 1);
    if (mask_out) memcpy(mask_out, w->mask, (size_t)L);
    return RP_OK;
}

/* Prompts are encoded one at a time (GEMMs over one prompt's L rows) so that a
 * prompt's embedding cannot depend on which prompts share its batch: a GEMM
 * library may round a row differently when the matrix has more rows (OpenBLAS
 * does for te-flux's 1024-row GEMMs at batch 2), and different parallel layouts
 * batch a run's prompts differently. */
rp_status rp_te_encode(const rp_te *m, const rp_ctx *ctx, const char *const *prompts, int B,
                       float *out_context, uint8_t *out_mask, float *out_pooled, rp_error *err) {
    assert(m && ctx && prompts && out_context);
    const rp_te_config *cfg = &m->cfg;
    if (B <= 0) return RP_FAIL(err, RP_ERR_INVALID, "text encoder: batch %d must be > 0", B);

    const size_t L = (size_t)cfg->max_len, D = (size_t)cfg->hidden, M = (size_t)cfg->mlp_ratio * D;
    /* The attention scratch (q, k, v, heads-out: 4 x (L, D)) is dead while the
     * MLP hidden (L, M) is live and vice versa, so they share one region. */
    const size_t n_shared = L * (M > 4 * D ? M : 4 * D);
    const size_t n_total = 3 * L * D + 3 * L * D + n_shared; /* xs, h, ys | qkv | shared */
    float *mem = malloc(n_total * sizeof(float));
    int32_t *tok = malloc(L * sizeof *tok);
    uint8_t *mask = malloc(L);
    if (!mem || !tok || !mask) {
        free(mem);
        free(tok);
        free(mask);
        return RP_FAIL(err, RP_ERR_NOMEM, "text encoder: cannot allocate %.1f MiB of activations",
                       n_total * sizeof(float) / 1048576.0);
    }
    te_scratch w;
    float *cur = mem;
    w.xs = cur;  cur += L * D;
    w.h = cur;   cur += L * D;
    w.ys = cur;  cur += L * D;
    w.qkv = cur; cur += 3 * L * D;
    w.q = cur;
    w.k = cur + L * D;
    w.v = cur + 2 * L * D;
    w.att = cur + 3 * L * D;
    w.mh = cur;
    cur += n_shared;
    assert((size_t)(cur - mem) == n_total);
    w.tok = tok;
    w.mask = mask;

    rp_status st = RP_OK;
    for (int b = 0; b < B && st == RP_OK; b++)
        st = encode_one(m, ctx, prompts[b], &w, out_context + (size_t)b * L * cfg->context_dim,
                        out_mask ? out_mask + (size_t)b * L : NULL,
                        out_pooled ? out_pooled + (size_t)b * cfg->pooled_dim : NULL, err);
    free(mem);
    free(tok);
    free(mask);
    return st;
}

/* ---- cost -------------------------------------------------------------------------- */

double rp_te_macs(const rp_te_config *cfg) {
    const double L = cfg->max_len, D = cfg->hidden, M = (double)cfg->mlp_ratio * D;
    double layer = L * D * 3.0 * D      /* qkv */
                   + 2.0 * L * L * D    /* QK^T and PV over all heads */
                   + L * D * D          /* proj */
                   + 2.0 * L * D * M;   /* fc1 + fc2 */
    return cfg->depth * layer + L * D * cfg->context_dim + D * cfg->pooled_dim;
}
