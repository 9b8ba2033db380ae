/* st_remap.c — diffusers names for checkpoints that ship under other names (see st_compose.h).
 *
 * Three namings besides diffusers' reach users as single files:
 *   BFL / ComfyUI FLUX   flux1-dev.safetensors, flux1-schnell.safetensors (BFL, no prefix)
 *                        and ComfyUI's files (prefix "model.diffusion_model."):
 *                        double_blocks.N.img_attn.qkv, single_blocks.N.linear1, ...
 *   SD3 original         sd3_medium.safetensors, sd3.5_large.safetensors ("model.diffusion_model."
 *                        prefix; the text encoders in the same file are left out):
 *                        joint_blocks.N.x_block.attn.qkv, ...
 *   LDM (CompVis) VAE    BFL's ae.safetensors (no prefix) and the VAE inside a single-file
 *                        checkpoint ("first_stage_model." prefix): decoder.mid.block_1,
 *                        decoder.up.N.block.M, decoder.mid.attn_1.q, ...
 * A file may hold a transformer and a VAE (an SD3 single file): each gets its scheme, and
 * the view holds both under diffusers' names (the two share no name).
 * The tables below are the module maps of diffusers' convert_flux_to_diffusers.py,
 * convert_sd3_to_diffusers.py and single_file_utils' convert_ldm_vae_checkpoint. The kinds
 * of entry:
 *   rename       one module to one, weight/bias as they are (a norm's ".scale" is ".weight")
 *   split        a fused projection's rows cut into consecutive parts: q, k, v thirds, or
 *                FLUX's single-block linear1 = [q; k; v; mlp] of C, C, C, 4C rows
 *                (mlp_ratio 4, so C = rows / 7)
 *   swap         AdaLayerNormContinuous: the original stores (shift, scale), diffusers
 *                (scale, shift): the two row halves change places (SD3 also in its
 *                last block's context norm, which is one)
 *   up           LDM VAE's decoder.up.I: a rename with the level counted from the other
 *                end (LDM's up.0 is the full-resolution stage, diffusers' up_blocks.(L-1);
 *                L = 1 + the highest I in the file, as diffusers counts it)
 *   conv1x1      the VAE's mid attention q/k/v/proj_out: a 1x1 conv weight [C, C, 1, 1]
 *                read as diffusers' Linear [C, C] (the same bytes)
 * A rename, split, up or conv1x1 is a view of the original's bytes; a swap is copied into
 * the view's own buffer. Either way each diffusers tensor holds exactly the bytes upstream's
 * conversion gives it, in the file's dtype. */
#include "st_compose.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strutil.h"

#define COMFY_PREFIX "model.diffusion_model."
#define VAE_PREFIX "first_stage_model."

typedef enum rule_kind { R_RENAME, R_SPLIT3, R_SPLIT_QKVM, R_SWAP, R_SWAP_LAST, R_UP, R_CONV1X1 } rule_kind;

/* src and dst are module names; "%d" (at most twice) is a block index, the dst's in the
 * src's order. */
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
    /* MMDiT-X (SD3.5 Medium's dual-attention blocks): attn2; their 9-chunk adaLN_modulation
     * (shift, scale, gate x 3, the order of SD35AdaLayerNormZeroX) is the rename below */
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

/* A ResnetBlock's five modules (nin_shortcut only where in != out). */
#define LDM_RESNET(kind, src, dst)                                                                         \
    {src ".norm1", kind, {dst ".norm1"}}, {src ".conv1", kind, {dst ".conv1"}},                           \
    {src ".norm2", kind, {dst ".norm2"}}, {src ".conv2", kind, {dst ".conv2"}},                           \
    {src ".nin_shortcut", kind, {dst ".conv_shortcut"}}
/* The mid block of "encoder" / "decoder": two resnets around one single-head attention. */
#define LDM_MID(p)                                                                                         \
    LDM_RESNET(R_RENAME, p ".mid.block_1", p ".mid_block.resnets.0"),                                     \
    LDM_RESNET(R_RENAME, p ".mid.block_2", p ".mid_block.resnets.1"),                                     \
    {p ".mid.attn_1.norm", R_RENAME, {p ".mid_block.attentions.0.group_norm"}},                           \
    {p ".mid.attn_1.q", R_CONV1X1, {p ".mid_block.attentions.0.to_q"}},                                   \
    {p ".mid.attn_1.k", R_CONV1X1, {p ".mid_block.attentions.0.to_k"}},                                   \
    {p ".mid.attn_1.v", R_CONV1X1, {p ".mid_block.attentions.0.to_v"}},                                   \
    {p ".mid.attn_1.proj_out", R_CONV1X1, {p ".mid_block.attentions.0.to_out.0"}},                        \
    {p ".conv_in", R_RENAME, {p ".conv_in"}}, {p ".norm_out", R_RENAME, {p ".conv_norm_out"}},            \
    {p ".conv_out", R_RENAME, {p ".conv_out"}}

/* The encoder is mapped too (repro decodes only; its tensors are carried, not read), so a
 * whole ae.safetensors is known and a misspelt name anywhere in it is reported. */
static const rule VAE_LDM[] = {
    LDM_MID("decoder"),
    LDM_RESNET(R_UP, "decoder.up.%d.block.%d", "decoder.up_blocks.%d.resnets.%d"),
    {"decoder.up.%d.upsample.conv", R_UP, {"decoder.up_blocks.%d.upsamplers.0.conv"}},
    {"post_quant_conv", R_RENAME, {"post_quant_conv"}},
    LDM_MID("encoder"),
    LDM_RESNET(R_RENAME, "encoder.down.%d.block.%d", "encoder.down_blocks.%d.resnets.%d"),
    {"encoder.down.%d.downsample.conv", R_RENAME, {"encoder.down_blocks.%d.downsamplers.0.conv"}},
    {"quant_conv", R_RENAME, {"quant_conv"}},
};

typedef struct scheme {
    const char *label;   /* for messages */
    const char *prefix;  /* the model's prefix inside a single-file checkpoint */
    const char *marker;  /* a name starting with this (after the prefix) selects the scheme */
    const char *counted; /* rules whose src starts with this count `last`, the highest first index */
    int vae;             /* 1: a VAE's scheme (claims only the VAE's bare names in a file it shares) */
    const rule *rules;
    int n;
} scheme;

/* A file uses at most one transformer scheme (the first whose marker it has) and the VAE's. */
static const scheme SCHEMES[] = {
    {"BFL/ComfyUI FLUX", COMFY_PREFIX, "double_blocks.", NULL, 0, FLUX_BFL, (int)(sizeof FLUX_BFL / sizeof *FLUX_BFL)},
    {"SD3 original", COMFY_PREFIX, "joint_blocks.", "joint_blocks.", 0, SD3_ORIG,
     (int)(sizeof SD3_ORIG / sizeof *SD3_ORIG)},
    {"LDM VAE", VAE_PREFIX, "decoder.mid.", "decoder.up.", 1, VAE_LDM, (int)(sizeof VAE_LDM / sizeof *VAE_LDM)},
};
#define N_SCHEMES (int)(sizeof SCHEMES / sizeof *SCHEMES)

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

/* 1 when mod matches pattern; each "%d" matches a decimal index, put in idx[0], idx[1]. */
static int match(const char *pattern, const char *mod, int idx[2]) {
    int k = 0;
    idx[0] = idx[1] = -1;
    while (*pattern) {
        if (pattern[0] == '%' && pattern[1] == 'd') {
            long v = 0;
            int digits = 0;
            while (*mod >= '0' && *mod <= '9' && digits < 6) { v = 10 * v + (*mod - '0'); mod++; digits++; }
            if (!digits || (*mod >= '0' && *mod <= '9') || k == 2) return 0;
            idx[k++] = (int)v;
            pattern += 2;
        } else if (*pattern++ != *mod++) {
            return 0;
        }
    }
    return *mod == '\0';
}

/* The scheme's rule for mod, or -1. */
static int find_rule(const scheme *sc, const char *mod, int idx[2]) {
    for (int r = 0; r < sc->n; r++)
        if (match(sc->rules[r].src, mod, idx)) return r;
    return -1;
}

/* The known name (pattern with the name's first two indices, numbers after a '.', plus a
 * suffix) nearest to name, into out; returns its distance. */
static int nearest_known(const scheme *sc, const char *name, char *out, size_t cap) {
    int idx[2] = {0, 0}, k = 0;
    for (const char *p = name; *p && k < 2; p++)
        if (*p >= '0' && *p <= '9' && (p == name || p[-1] == '.')) {
            idx[k++] = atoi(p);
            while (p[1] >= '0' && p[1] <= '9') p++;
        }
    int best = 1 << 30;
    out[0] = '\0';
    for (int r = 0; r < sc->n; r++)
        for (size_t s = 0; s < sizeof SUFFIXES / sizeof *SUFFIXES; s++) {
            char mod[160], cand[192];
            snprintf(mod, sizeof mod, sc->rules[r].src, idx[0], idx[1]); /* indices a pattern lacks are ignored */
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

/* What becomes of one tensor of the file. */
typedef struct fate {
    const scheme *sc; /* its scheme; NULL: kept under its own name less the prefix */
    int rule;         /* sc's rule (-1: left out; with sc NULL, >= 0: kept) */
    int idx[2];       /* the rule's indices */
    size_t strip;     /* prefix bytes dropped from the name */
} fate;

/* The kind that applies to tensor fate fa, last = its scheme's highest counted index:
 * R_SWAP_LAST is a swap in the last block only; R_UP a rename whose first index, into
 * *idx0, counts from the other end (L - 1 - i, L = last + 1 levels). */
static rule_kind effective_kind(const fate *fa, int last, int *idx0) {
    const rule_kind k = fa->sc->rules[fa->rule].kind;
    *idx0 = fa->idx[0];
    if (k == R_SWAP_LAST) return fa->idx[0] == last ? R_SWAP : R_RENAME;
    if (k == R_UP) {
        *idx0 = last - fa->idx[0];
        return R_RENAME;
    }
    return k;
}

/* A conv1x1 weight [C, C', 1, 1] as [C, C'] (*ndim = 2); a bias, or a weight already
 * [C, C'], as it is. Any other weight is an error naming file, tensor and shape. */
static rp_status conv1x1_shape(const rp_st_file *f, const rp_st_tensor *t, const char *suf, int *ndim,
                               rp_error *err) {
    if (strcmp(suf, ".weight") || t->ndim == 2) return RP_OK;
    if (t->ndim == 4 && t->shape[2] == 1 && t->shape[3] == 1) {
        *ndim = 2;
        return RP_OK;
    }
    char sb[96];
    return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has shape %s, not a 1x1 conv [C, C, 1, 1] (or [C, C]) as an "
                   "attention projection is", f->path, t->name, rp_st_shape_str(sb, sizeof sb, t->ndim, t->shape));
}

/* Adds tensor t (fate fa, `last` its scheme's) to v under diffusers' names; *buf is v's own
 * data still free (a swap copies there and advances it). */
static rp_status add_mapped(rp_st_file *v, const rp_st_file *f, const rp_st_tensor *t, const fate *fa, int last,
                            unsigned char **buf, rp_error *err) {
    char mod[160], name[192];
    const char *suf = split_suffix(t->name + fa->strip, mod, sizeof mod);
    if (!strcmp(suf, ".scale")) suf = ".weight"; /* BFL's RMSNorm "scale" is diffusers' "weight" */
    const rule *r = &fa->sc->rules[fa->rule];
    int idx0 = 0;
    const rule_kind k = effective_kind(fa, last, &idx0);
    const int64_t rows = t->ndim ? t->shape[0] : 0;
    const size_t row_bytes = rows ? t->nbytes / (size_t)rows : 0;
    int64_t shape[RP_ST_MAX_DIMS];
    int ndim = t->ndim;
    memcpy(shape, t->shape, sizeof shape);
    if (k != R_RENAME && k != R_CONV1X1 && (t->ndim < 1 || (k == R_SWAP && rows % 2)))
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' (rank %d, %lld rows) cannot be %s", f->path, t->name,
                       t->ndim, (long long)rows, k == R_SWAP ? "cut into (shift, scale) halves" : "split by rows");
    if (k == R_CONV1X1) RP_TRY(conv1x1_shape(f, t, suf, &ndim, err));
    for (int p = 0; p < n_parts(k); p++) {
        snprintf(mod, sizeof mod, r->dst[p], idx0, fa->idx[1]);
        snprintf(name, sizeof name, "%s%s", mod, suf);
        const unsigned char *data = t->data;
        if (k == R_SPLIT3 || k == R_SPLIT_QKVM) {
            int64_t row0 = 0;
            shape[0] = part_rows(k, rows, p, &row0);
            if (!shape[0])
                return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has %lld rows, which do not split into %s",
                               f->path, t->name, (long long)rows,
                               k == R_SPLIT3 ? "q, k, v thirds" : "q, k, v, mlp of C, C, C, 4C rows");
            data += (size_t)row0 * row_bytes;
        } else if (k == R_SWAP) {
            const size_t half = t->nbytes / 2;
            memcpy(*buf, data + half, half); /* diffusers (scale, shift) = original (shift, scale) swapped */
            memcpy(*buf + half, data, half);
            data = *buf;
            *buf += t->nbytes;
        }
        RP_TRY(rp_st_compose_add(v, name, t->dtype, ndim, shape, data, err));
    }
    return RP_OK;
}

/* Builds the view of f: tensor i as fates[i] says; last[s] = SCHEMES[s]'s highest counted
 * index (SD3's context_pre_only block, the VAE's top up level). */
static rp_status build_view(const rp_st_file *f, const fate *fates, const int *last, rp_st_file **out,
                            rp_error *err) {
    size_t own = 0;
    int cap = 0, used[N_SCHEMES] = {0};
    for (int i = 0; i < f->n; i++) {
        const fate *fa = &fates[i];
        if (fa->rule < 0) continue;
        if (!fa->sc) { cap++; continue; }
        const int si = (int)(fa->sc - SCHEMES);
        int idx0;
        const rule_kind k = effective_kind(fa, last[si], &idx0);
        used[si] = 1;
        cap += n_parts(k);
        if (k == R_SWAP) own += f->tensors[i].nbytes;
    }
    char label[4200];
    size_t n = (size_t)snprintf(label, sizeof label, "%s [", f->path);
    int any = 0;
    for (int s = 0; s < N_SCHEMES && n < sizeof label; s++)
        if (used[s]) n += (size_t)snprintf(label + n, sizeof label - n, "%s%s", any++ ? ", " : "", SCHEMES[s].label);
    if (n < sizeof label)
        snprintf(label + n, sizeof label - n, any ? " names read as diffusers']" : COMFY_PREFIX " prefix removed]");
    rp_st_file *v = NULL;
    RP_TRY(rp_st_compose_new(label, cap, own, &v, err));
    unsigned char *buf = v->map;
    rp_status s = RP_OK;
    for (int i = 0; i < f->n && s == RP_OK; i++) {
        const fate *fa = &fates[i];
        const rp_st_tensor *t = &f->tensors[i];
        if (fa->rule < 0) continue;
        if (fa->sc) s = add_mapped(v, f, t, fa, last[fa->sc - SCHEMES], &buf, err);
        else s = rp_st_compose_add(v, t->name + fa->strip, t->dtype, t->ndim, t->shape, t->data, err);
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

/* 1 when bare name is one of a VAE's (what the VAE scheme claims in a file it shares). */
static int vae_name(const char *nm) {
    static const char *const HEADS[] = {"encoder.", "decoder.", "quant_conv.", "post_quant_conv."};
    for (size_t h = 0; h < sizeof HEADS / sizeof *HEADS; h++)
        if (!strncmp(nm, HEADS[h], strlen(HEADS[h]))) return 1;
    return 0;
}

/* 1 when some name of f starts with prefix. */
static int has_prefix(const rp_st_file *f, const char *prefix) {
    for (int i = 0; i < f->n; i++)
        if (!strncmp(f->tensors[i].name, prefix, strlen(prefix))) return 1;
    return 0;
}

/* The scheme (a VAE's when vae, else a transformer's) f uses: its marker after the scheme's
 * prefix where the file has that prefix, else on a bare name; NULL when none. */
static const scheme *find_scheme(const rp_st_file *f, int vae) {
    for (int s = 0; s < N_SCHEMES; s++) {
        const scheme *sc = &SCHEMES[s];
        if (sc->vae != vae) continue;
        const int prefixed = has_prefix(f, sc->prefix);
        for (int i = 0; i < f->n; i++) {
            const char *nm = f->tensors[i].name;
            if (prefixed && strncmp(nm, sc->prefix, strlen(sc->prefix))) continue;
            if (prefixed) nm += strlen(sc->prefix);
            if (!strncmp(nm, sc->marker, strlen(sc->marker))) return sc;
        }
    }
    return NULL;
}

/* Tensor nm's rule under sc (its first strip bytes a prefix) into *fa, or an error naming
 * the nearest known name. */
static rp_status assign(const rp_st_file *f, const char *nm, const scheme *sc, size_t strip, fate *fa,
                        rp_error *err) {
    char mod[160];
    fa->sc = sc;
    fa->strip = strip;
    split_suffix(nm + strip, mod, sizeof mod);
    fa->rule = find_rule(sc, mod, fa->idx);
    if (fa->rule >= 0) return RP_OK;
    char near[192];
    const int d = nearest_known(sc, nm + strip, near, sizeof near), lim = (int)strlen(nm + strip) / 3;
    if (d <= (lim > 2 ? lim : 2))
        return RP_FAIL(err, RP_ERR_NOT_FOUND,
                       "%s: tensor '%s' is not a name repro knows under the %s naming (did you mean '%s'?)", f->path,
                       nm, sc->label, near);
    return RP_FAIL(err, RP_ERR_NOT_FOUND,
                   "%s: tensor '%s' is not a name repro knows under the %s naming (engine/st_remap.c lists them)",
                   f->path, nm, sc->label);
}

/* Decides every tensor's fate (fates[f->n]) for transformer scheme st and VAE scheme sv
 * (either NULL); the file's transformer is under COMFY_PREFIX when tpre, its VAE under
 * VAE_PREFIX when vpre. Fills last[] for the schemes used. */
static rp_status decide(const rp_st_file *f, const scheme *st, int tpre, const scheme *sv, int vpre, fate *fates,
                        int *last, rp_error *err) {
    const size_t tl = strlen(COMFY_PREFIX), vl = strlen(VAE_PREFIX);
    for (int s = 0; s < N_SCHEMES; s++) last[s] = -1;
    for (int i = 0; i < f->n; i++) {
        const char *nm = f->tensors[i].name;
        fate *fa = &fates[i];
        memset(fa, 0, sizeof *fa);
        fa->rule = -1;
        if (!strncmp(nm, VAE_PREFIX, vl)) { /* a single file's VAE (a training loss's tensors left out) */
            if (sv && vpre && vae_name(nm + vl)) RP_TRY(assign(f, nm, sv, vl, fa, err));
        } else if (!strncmp(nm, COMFY_PREFIX, tl)) { /* a single file's transformer */
            if (st) {
                RP_TRY(assign(f, nm, st, tl, fa, err));
            } else { /* diffusers names under ComfyUI's prefix: strip it */
                fa->rule = 0;
                fa->strip = tl;
            }
        } else if (sv && !vpre && vae_name(nm)) { /* ae.safetensors */
            RP_TRY(assign(f, nm, sv, 0, fa, err));
        } else if (st && !tpre) { /* flux1-dev.safetensors: every other name is the transformer's */
            RP_TRY(assign(f, nm, st, 0, fa, err));
        } /* else left out: the file's text encoders, an EMA's bookkeeping, ... */
        const scheme *sc = fa->sc;
        if (sc && sc->counted && !strncmp(sc->rules[fa->rule].src, sc->counted, strlen(sc->counted)) &&
            fa->idx[0] > last[sc - SCHEMES])
            last[sc - SCHEMES] = fa->idx[0];
    }
    return RP_OK;
}

rp_status rp_st_remap(rp_st_file **fp, rp_error *err) {
    rp_st_file *f = *fp;
    const int tpre = has_prefix(f, COMFY_PREFIX), vpre = has_prefix(f, VAE_PREFIX);
    const scheme *st = find_scheme(f, 0), *sv = find_scheme(f, 1);
    if (!st && !tpre && !sv) return RP_OK; /* diffusers' (or DiT's) own names */

    fate *fates = malloc(sizeof *fates * (size_t)(f->n + 1));
    int last[N_SCHEMES];
    rp_status s = RP_OK;
    if (!fates) s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", f->path);
    if (s == RP_OK) s = decide(f, st, tpre, sv, vpre, fates, last, err);
    rp_st_file *v = NULL;
    if (s == RP_OK) s = build_view(f, fates, last, &v, err);
    if (s == RP_OK) {
        s = rp_st_compose_part(v, f, err); /* the view points into f's data */
        f = NULL;                           /* owned (or, on failure, closed) by v now */
        if (s == RP_OK) *fp = v;
        else rp_st_close(v);
    }
    free(fates);
    if (s != RP_OK) {
        rp_st_close(f);
        *fp = NULL;
    }
    return s;
}
