/* st_remap.c — diffusers names for checkpoints that ship under other names (see st_compose.h).
 *
 * Two namings besides diffusers' reach users as single files:
 *   BFL / ComfyUI FLUX   flux1-dev.safetensors, flux1-schnell.safetensors (BFL, no prefix)
 *                        and ComfyUI's files (prefix "model.diffusion_model."):
 *                        double_blocks.N.img_attn.qkv, single_blocks.N.linear1, ...
 *   SD3 original         sd3_medium.safetensors, sd3.5_large.safetensors ("model.diffusion_model."
 *                        prefix; the VAE and text encoders in the same file are left out):
 *                        joint_blocks.N.x_block.attn.qkv, ...
 * The tables below are the module maps of diffusers' convert_flux_to_diffusers.py and
 * convert_sd3_to_diffusers.py (also single_file_utils). Three kinds of entry:
 *   rename       one module to one, weight/bias as they are (a norm's ".scale" is ".weight")
 *   split        a fused projection's rows cut into consecutive parts: q, k, v thirds, or
 *                FLUX's single-block linear1 = [q; k; v; mlp] of C, C, C, 4C rows
 *                (mlp_ratio 4, so C = rows / 7)
 *   swap         AdaLayerNormContinuous: the original stores (shift, scale), diffusers
 *                (scale, shift): the two row halves change places (SD3 also in its
 *                last block's context norm, which is one)
 * A rename or split is a view of the original's bytes; a swap is copied into the view's
 * own buffer. Either way each diffusers tensor holds exactly the bytes upstream's
 * conversion gives it, in the file's dtype. */
#include "st_compose.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"

#define COMFY_PREFIX "model.diffusion_model."

typedef enum rule_kind { R_RENAME, R_SPLIT3, R_SPLIT_QKVM, R_SWAP, R_SWAP_LAST } rule_kind;

/* src and dst are module names; "%d" (at most once) is the block index. */
typedef struct rule {
    const char *src;
    rule_kind kind;
    const char *dst[4];
} rule;

static const rule FLUX_BFL[] = {
    {"time_in.in_layer", R_RENAME, {"time_text_embed.timestep_embedder.linear_1"}},
    {"time_in.out_layer", R_RENAME, {"time_text_embed.timestep_embedder.linear_2"}},
    {"vector_in.in_layer", R_RENAME, {"time_text_embed.text_embedder.linear_1"}},
    {"vector_in.out_layer", R_RENAME, {"time_text_embed.text_embedder.linear_2"}},
    {"guidance_in.in_layer", R_RENAME, {"time_text_embed.guidance_embedder.linear_1"}},
    {"guidance_in.out_layer", R_RENAME, {"time_text_embed.guidance_embedder.linear_2"}},
    {"txt_in", R_RENAME, {"context_embedder"}},
    {"img_in", R_RENAME, {"x_embedder"}},
    {"double_blocks.%d.img_mod.lin", R_RENAME, {"transformer_blocks.%d.norm1.linear"}},
    {"double_blocks.%d.txt_mod.lin", R_RENAME, {"transformer_blocks.%d.norm1_context.linear"}},
    {"double_blocks.%d.img_attn.qkv", R_SPLIT3,
     {"transformer_blocks.%d.attn.to_q", "transformer_blocks.%d.attn.to_k", "transformer_blocks.%d.attn.to_v"}},
    {"double_blocks.%d.txt_attn.qkv", R_SPLIT3,
     {"transformer_blocks.%d.attn.add_q_proj", "transformer_blocks.%d.attn.add_k_proj",
      "transformer_blocks.%d.attn.add_v_proj"}},
    {"double_blocks.%d.img_attn.norm.query_norm", R_RENAME, {"transformer_blocks.%d.attn.norm_q"}},
    {"double_blocks.%d.img_attn.norm.key_norm", R_RENAME, {"transformer_blocks.%d.attn.norm_k"}},
    {"double_blocks.%d.txt_attn.norm.query_norm", R_RENAME, {"transformer_blocks.%d.attn.norm_added_q"}},
    {"double_blocks.%d.txt_attn.norm.key_norm", R_RENAME, {"transformer_blocks.%d.attn.norm_added_k"}},
    {"double_blocks.%d.img_attn.proj", R_RENAME, {"transformer_blocks.%d.attn.to_out.0"}},
    {"double_blocks.%d.txt_attn.proj", R_RENAME, {"transformer_blocks.%d.attn.to_add_out"}},
    {"double_blocks.%d.img_mlp.0", R_RENAME, {"transformer_blocks.%d.ff.net.0.proj"}},
    {"double_blocks.%d.img_mlp.2", R_RENAME, {"transformer_blocks.%d.ff.net.2"}},
    {"double_blocks.%d.txt_mlp.0", R_RENAME, {"transformer_blocks.%d.ff_context.net.0.proj"}},
    {"double_blocks.%d.txt_mlp.2", R_RENAME, {"transformer_blocks.%d.ff_context.net.2"}},
    {"single_blocks.%d.modulation.lin", R_RENAME, {"single_transformer_blocks.%d.norm.linear"}},
    {"single_blocks.%d.linear1", R_SPLIT_QKVM,
     {"single_transformer_blocks.%d.attn.to_q", "single_transformer_blocks.%d.attn.to_k",
      "single_transformer_blocks.%d.attn.to_v", "single_transformer_blocks.%d.proj_mlp"}},
    {"single_blocks.%d.norm.query_norm", R_RENAME, {"single_transformer_blocks.%d.attn.norm_q"}},
    {"single_blocks.%d.norm.key_norm", R_RENAME, {"single_transformer_blocks.%d.attn.norm_k"}},
    {"single_blocks.%d.linear2", R_RENAME, {"single_transformer_blocks.%d.proj_out"}},
    {"final_layer.linear", R_RENAME, {"proj_out"}},
    {"final_layer.adaLN_modulation.1", R_SWAP, {"norm_out.linear"}},
};

static const rule SD3_ORIG[] = {
    {"pos_embed", R_RENAME, {"pos_embed.pos_embed"}},
    {"x_embedder.proj", R_RENAME, {"pos_embed.proj"}},
    {"t_embedder.mlp.0", R_RENAME, {"time_text_embed.timestep_embedder.linear_1"}},
    {"t_embedder.mlp.2", R_RENAME, {"time_text_embed.timestep_embedder.linear_2"}},
    {"y_embedder.mlp.0", R_RENAME, {"time_text_embed.text_embedder.linear_1"}},
    {"y_embedder.mlp.2", R_RENAME, {"time_text_embed.text_embedder.linear_2"}},
    {"context_embedder", R_RENAME, {"context_embedder"}},
    {"joint_blocks.%d.x_block.attn.qkv", R_SPLIT3,
     {"transformer_blocks.%d.attn.to_q", "transformer_blocks.%d.attn.to_k", "transformer_blocks.%d.attn.to_v"}},
    {"joint_blocks.%d.context_block.attn.qkv", R_SPLIT3,
     {"transformer_blocks.%d.attn.add_q_proj", "transformer_blocks.%d.attn.add_k_proj",
      "transformer_blocks.%d.attn.add_v_proj"}},
    {"joint_blocks.%d.x_block.attn.ln_q", R_RENAME, {"transformer_blocks.%d.attn.norm_q"}},
    {"joint_blocks.%d.x_block.attn.ln_k", R_RENAME, {"transformer_blocks.%d.attn.norm_k"}},
    {"joint_blocks.%d.context_block.attn.ln_q", R_RENAME, {"transformer_blocks.%d.attn.norm_added_q"}},
    {"joint_blocks.%d.context_block.attn.ln_k", R_RENAME, {"transformer_blocks.%d.attn.norm_added_k"}},
    {"joint_blocks.%d.x_block.attn.proj", R_RENAME, {"transformer_blocks.%d.attn.to_out.0"}},
    {"joint_blocks.%d.context_block.attn.proj", R_RENAME, {"transformer_blocks.%d.attn.to_add_out"}},
    /* MMDiT-X (SD3.5 Medium): mapped so the model's loader can name what it holds */
    {"joint_blocks.%d.x_block.attn2.qkv", R_SPLIT3,
     {"transformer_blocks.%d.attn2.to_q", "transformer_blocks.%d.attn2.to_k", "transformer_blocks.%d.attn2.to_v"}},
    {"joint_blocks.%d.x_block.attn2.ln_q", R_RENAME, {"transformer_blocks.%d.attn2.norm_q"}},
    {"joint_blocks.%d.x_block.attn2.ln_k", R_RENAME, {"transformer_blocks.%d.attn2.norm_k"}},
    {"joint_blocks.%d.x_block.attn2.proj", R_RENAME, {"transformer_blocks.%d.attn2.to_out.0"}},
    {"joint_blocks.%d.x_block.adaLN_modulation.1", R_RENAME, {"transformer_blocks.%d.norm1.linear"}},
    {"joint_blocks.%d.context_block.adaLN_modulation.1", R_SWAP_LAST, {"transformer_blocks.%d.norm1_context.linear"}},
    {"joint_blocks.%d.x_block.mlp.fc1", R_RENAME, {"transformer_blocks.%d.ff.net.0.proj"}},
    {"joint_blocks.%d.x_block.mlp.fc2", R_RENAME, {"transformer_blocks.%d.ff.net.2"}},
    {"joint_blocks.%d.context_block.mlp.fc1", R_RENAME, {"transformer_blocks.%d.ff_context.net.0.proj"}},
    {"joint_blocks.%d.context_block.mlp.fc2", R_RENAME, {"transformer_blocks.%d.ff_context.net.2"}},
    {"final_layer.linear", R_RENAME, {"proj_out"}},
    {"final_layer.adaLN_modulation.1", R_SWAP, {"norm_out.linear"}},
};

typedef struct scheme {
    const char *label;   /* for messages */
    const char *marker;  /* a name starting with this (after the prefix) selects the scheme */
    const rule *rules;
    int n;
} scheme;

static const scheme SCHEMES[] = {
    {"BFL/ComfyUI FLUX", "double_blocks.", FLUX_BFL, (int)(sizeof FLUX_BFL / sizeof *FLUX_BFL)},
    {"SD3 original", "joint_blocks.", SD3_ORIG, (int)(sizeof SD3_ORIG / sizeof *SD3_ORIG)},
};

static const char *const SUFFIXES[] = {".weight", ".bias", ".scale"};

/* Splits name into module (into mod, cap bytes) and suffix (a SUFFIXES entry or ""). */
static const char *split_suffix(const char *name, char *mod, size_t cap) {
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof SUFFIXES / sizeof *SUFFIXES; i++) {
        const size_t k = strlen(SUFFIXES[i]);
        if (n > k && !strcmp(name + n - k, SUFFIXES[i])) {
            snprintf(mod, cap, "%.*s", (int)(n - k), name);
            return SUFFIXES[i];
        }
    }
    snprintf(mod, cap, "%s", name);
    return "";
}

/* 1 when mod matches pattern (a "%d" matches a decimal block index, put in *idx). */
static int match(const char *pattern, const char *mod, int *idx) {
    const char *d = strstr(pattern, "%d");
    *idx = -1;
    if (!d) return !strcmp(pattern, mod);
    const size_t pre = (size_t)(d - pattern);
    if (strncmp(pattern, mod, pre)) return 0;
    const char *p = mod + pre;
    long v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 6) { v = 10 * v + (*p - '0'); p++; digits++; }
    if (!digits || (*p >= '0' && *p <= '9')) return 0;
    if (strcmp(p, d + 2)) return 0;
    *idx = (int)v;
    return 1;
}

/* The scheme's rule for mod, or -1. */
static int find_rule(const scheme *sc, const char *mod, int *idx) {
    for (int r = 0; r < sc->n; r++)
        if (match(sc->rules[r].src, mod, idx)) return r;
    return -1;
}

/* The known name (pattern with the name's first number as index, plus a suffix) nearest
 * to name, into out; returns its distance. */
static int nearest_known(const scheme *sc, const char *name, char *out, size_t cap) {
    int idx = 0;
    for (const char *p = name; *p; p++)
        if (*p >= '0' && *p <= '9') { idx = atoi(p); break; }
    int best = 1 << 30;
    out[0] = '\0';
    for (int r = 0; r < sc->n; r++)
        for (size_t s = 0; s < sizeof SUFFIXES / sizeof *SUFFIXES; s++) {
            char mod[160], cand[192];
            snprintf(mod, sizeof mod, sc->rules[r].src, idx); /* a pattern without %d ignores idx */
            snprintf(cand, sizeof cand, "%s%s", mod, SUFFIXES[s]);
            const int d = rp_edit_distance(name, cand);
            if (d < best) { best = d; snprintf(out, cap, "%s", cand); }
        }
    return best;
}

/* Rows of part p of a split of `rows` rows by kind; 0 when rows does not divide. */
static int64_t part_rows(rule_kind kind, int64_t rows, int p, int64_t *row0) {
    if (kind == R_SPLIT3) {
        if (rows % 3) return 0;
        *row0 = p * (rows / 3);
        return rows / 3;
    }
    assert(kind == R_SPLIT_QKVM);
    if (rows % 7) return 0;
    const int64_t C = rows / 7;
    *row0 = p * C;
    return p < 3 ? C : 4 * C;
}

static int n_parts(rule_kind k) { return k == R_SPLIT3 ? 3 : k == R_SPLIT_QKVM ? 4 : 1; }

/* Builds the view of f under sc. want[i] = the rule of f's tensor i (-1: left out), idx[i]
 * its block index; last = the highest block index (SD3's context_pre_only block). */
static rp_status build_view(const rp_st_file *f, const scheme *sc, const int *want, const int *idx, int last,
                            rp_st_file **out, rp_error *err) {
    size_t own = 0;
    int cap = 0;
    for (int i = 0; i < f->n; i++) {
        if (want[i] < 0) continue;
        const rule_kind k = sc->rules[want[i]].kind;
        cap += n_parts(k);
        if (k == R_SWAP || (k == R_SWAP_LAST && idx[i] == last)) own += f->tensors[i].nbytes;
    }
    char label[4200];
    snprintf(label, sizeof label, "%s [%s names read as diffusers']", f->path, sc->label);
    rp_st_file *v = NULL;
    RP_TRY(rp_st_compose_new(label, cap, own, &v, err));
    unsigned char *buf = v->map;
    rp_status s = RP_OK;
    for (int i = 0; i < f->n && s == RP_OK; i++) {
        if (want[i] < 0) continue;
        const rp_st_tensor *t = &f->tensors[i];
        const rule *r = &sc->rules[want[i]];
        char mod[160], name[192];
        const char *suf = split_suffix(strncmp(t->name, COMFY_PREFIX, strlen(COMFY_PREFIX)) ? t->name
                                                                                            : t->name + strlen(COMFY_PREFIX),
                                       mod, sizeof mod);
        if (!strcmp(suf, ".scale")) suf = ".weight"; /* BFL's RMSNorm "scale" is diffusers' "weight" */
        const int64_t rows = t->ndim ? t->shape[0] : 0;
        const size_t row_bytes = rows ? t->nbytes / (size_t)rows : 0;
        int64_t shape[RP_ST_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        rule_kind k = r->kind == R_SWAP_LAST ? (idx[i] == last ? R_SWAP : R_RENAME) : r->kind;
        if (k != R_RENAME && (t->ndim < 1 || (k == R_SWAP && rows % 2))) {
            s = RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' (rank %d, %lld rows) cannot be %s", f->path, t->name,
                        t->ndim, (long long)rows, k == R_SWAP ? "cut into (shift, scale) halves" : "split by rows");
            break;
        }
        for (int p = 0; p < n_parts(k) && s == RP_OK; p++) {
            snprintf(mod, sizeof mod, r->dst[p], idx[i]);
            snprintf(name, sizeof name, "%s%s", mod, suf);
            const unsigned char *data = t->data;
            if (k == R_SPLIT3 || k == R_SPLIT_QKVM) {
                int64_t row0 = 0;
                shape[0] = part_rows(k, rows, p, &row0);
                if (!shape[0]) {
                    s = RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has %lld rows, which do not split into %s",
                                f->path, t->name, (long long)rows,
                                k == R_SPLIT3 ? "q, k, v thirds" : "q, k, v, mlp of C, C, C, 4C rows");
                    break;
                }
                data += (size_t)row0 * row_bytes;
            } else if (k == R_SWAP) {
                const size_t half = t->nbytes / 2;
                memcpy(buf, data + half, half); /* diffusers (scale, shift) = original (shift, scale) swapped */
                memcpy(buf + half, data, half);
                data = buf;
                buf += t->nbytes;
            }
            s = rp_st_compose_add(v, name, t->dtype, t->ndim, shape, data, err);
        }
    }
    if (s == RP_OK) s = rp_st_compose_meta(v, f, err);
    if (s == RP_OK) s = rp_st_compose_finish(v, err);
    if (s != RP_OK) {
        rp_st_close(v);
        return s;
    }
    *out = v;
    return RP_OK;
}

rp_status rp_st_remap(rp_st_file **fp, rp_error *err) {
    rp_st_file *f = *fp;
    const size_t plen = strlen(COMFY_PREFIX);
    int prefixed = 0;
    for (int i = 0; i < f->n && !prefixed; i++) prefixed = !strncmp(f->tensors[i].name, COMFY_PREFIX, plen);
    const scheme *sc = NULL;
    for (size_t s = 0; s < sizeof SCHEMES / sizeof *SCHEMES && !sc; s++)
        for (int i = 0; i < f->n && !sc; i++) {
            const char *nm = f->tensors[i].name;
            if (prefixed && strncmp(nm, COMFY_PREFIX, plen)) continue;
            if (!strncmp(nm + (prefixed ? plen : 0), SCHEMES[s].marker, strlen(SCHEMES[s].marker))) sc = &SCHEMES[s];
        }
    if (!sc && !prefixed) return RP_OK; /* diffusers' (or DiT's) own names */

    int *want = malloc(sizeof(int) * (size_t)(f->n + 1)), *idx = malloc(sizeof(int) * (size_t)(f->n + 1));
    rp_status s = RP_OK;
    if (!want || !idx) { s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", f->path); goto done; }
    int last = -1;
    for (int i = 0; i < f->n; i++) {
        const char *nm = f->tensors[i].name;
        want[i] = -1;
        idx[i] = -1;
        if (prefixed && strncmp(nm, COMFY_PREFIX, plen)) continue; /* the file's VAE / text encoders */
        if (prefixed) nm += plen;
        if (!sc) { /* diffusers names under ComfyUI's prefix: strip it */
            want[i] = 0;
            continue;
        }
        char mod[160];
        split_suffix(nm, mod, sizeof mod);
        want[i] = find_rule(sc, mod, &idx[i]);
        if (want[i] < 0) {
            char near[192];
            const int d = nearest_known(sc, nm, near, sizeof near), lim = (int)strlen(nm) / 3;
            if (d <= (lim > 2 ? lim : 2))
                s = RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: tensor '%s' is not a %s name repro knows (did you mean '%s'?)",
                            f->path, f->tensors[i].name, sc->label, near);
            else
                s = RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: tensor '%s' is not a %s name repro knows (engine/st_remap.c "
                            "lists them)", f->path, f->tensors[i].name, sc->label);
            goto done;
        }
        if (idx[i] > last && !strncmp(sc->rules[want[i]].src, "joint_blocks.", 13)) last = idx[i];
    }
    rp_st_file *v = NULL;
    if (sc) {
        s = build_view(f, sc, want, idx, last, &v, err);
    } else { /* prefix only: every prefixed tensor under its own name */
        int cap = 0;
        for (int i = 0; i < f->n; i++) cap += want[i] >= 0;
        char label[4200];
        snprintf(label, sizeof label, "%s [" COMFY_PREFIX " prefix removed]", f->path);
        s = rp_st_compose_new(label, cap, 0, &v, err);
        for (int i = 0; i < f->n && s == RP_OK; i++)
            if (want[i] >= 0) {
                const rp_st_tensor *t = &f->tensors[i];
                s = rp_st_compose_add(v, t->name + plen, t->dtype, t->ndim, t->shape, t->data, err);
            }
        if (s == RP_OK) s = rp_st_compose_meta(v, f, err);
        if (s == RP_OK) s = rp_st_compose_finish(v, err);
        if (s != RP_OK) { rp_st_close(v); v = NULL; }
    }
    if (s == RP_OK) {
        s = rp_st_compose_part(v, f, err); /* the view points into f's data */
        f = NULL;                           /* owned (or, on failure, closed) by v now */
        if (s == RP_OK) *fp = v;
        else rp_st_close(v);
    }
done:
    free(want);
    free(idx);
    if (s != RP_OK) {
        rp_st_close(f);
        *fp = NULL;
    }
    return s;
}
