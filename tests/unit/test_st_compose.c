/* test_st_compose.c — checkpoints as they ship (engine/st_compose.h): a sharded copy
 * (index.json) and BFL / ComfyUI / SD3-original renamings of repro's own synthetic
 * weights, and LDM-named VAEs (bare as BFL's ae.safetensors, or under a single file's
 * first_stage_model. prefix), load bitwise equal to the single diffusers-named file; a
 * missing shard or tensor, a shape mismatch and an unknown name fail with messages naming
 * what is wrong.
 *
 * The renamed files are written here from the diffusers names by the inverse of the
 * conversion (diffusers -> original: concatenate q, k, v rows; swap the (scale, shift)
 * halves back to (shift, scale); the VAE's up levels reversed, its attention weights as
 * 1x1 convs), spelled out independently of engine/st_remap.c. */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/models/registry.h"
#include "engine/models/sd3.h"
#include "engine/params.h"
#include "engine/safetensors.h"
#include "engine/st_compose.h"
#include "engine/vae/vae.h"

static char g_dir[256];

static const char *tmp_path(const char *name) {
    static char bufs[8][512];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, 512, "%s/%s", g_dir, name);
    return b;
}

/* A model's synthetic weights, written as one diffusers-named file and loaded from it. */
typedef struct ref {
    rp_param_list l;
    float *block, **ptrs;
    char path[512];
} ref;

/* r from the parameter list l (taken over): its synthetic weights (seeded by tag) written
 * to tmp file `file` and loaded back. */
static void ref_from_list(ref *r, rp_param_list l, const char *tag, const char *file) {
    memset(r, 0, sizeof *r);
    rp_error err;
    r->l = l;
    snprintf(r->path, sizeof r->path, "%s/%s", g_dir, file);
    ck_assert_msg(rp_params_write_synthetic(&r->l, tag, 7, r->path, &err) == RP_OK, "%s", err.msg);
    rp_st_file *f = NULL;
    ck_assert_msg(rp_weights_open(r->path, &f, &err) == RP_OK, "%s", err.msg);
    r->ptrs = calloc((size_t)r->l.n, sizeof *r->ptrs);
    ck_assert_msg(rp_params_load(&r->l, f, &r->block, r->ptrs, &err) == RP_OK, "%s", err.msg);
    rp_st_close(f);
}

static void ref_make(ref *r, const char *model, int depth) {
    rp_param_list l = {0};
    rp_error err;
    ck_assert_msg(rp_model_param_specs(model, depth, &l, &err) == RP_OK, "%s", err.msg);
    char file[128];
    snprintf(file, sizeof file, "%s-%d.safetensors", model, depth);
    ref_from_list(r, l, model, file);
}

static void ref_free(ref *r) {
    free(r->block);
    free(r->ptrs);
    rp_params_free(&r->l);
}

static int ref_find(const ref *r, const char *name) {
    for (int i = 0; i < r->l.n; i++)
        if (!strcmp(r->l.specs[i].name, name)) return i;
    return -1;
}

/* Loads path through rp_weights_open into r's parameter list; 1 when every parameter is
 * bitwise r's. */
static int loads_equal(const ref *r, const char *path) {
    rp_st_file *f = NULL;
    rp_error err;
    rp_error_clear(&err);
    ck_assert_msg(rp_weights_open(path, &f, &err) == RP_OK, "%s", err.msg);
    float *block = NULL, **ptrs = calloc((size_t)r->l.n, sizeof *ptrs);
    ck_assert_msg(rp_params_load(&r->l, f, &block, ptrs, &err) == RP_OK, "%s", err.msg);
    const int same = memcmp(block, r->block, rp_params_total(&r->l) * sizeof(float)) == 0;
    free(block);
    free(ptrs);
    rp_st_close(f);
    return same;
}

/* ---- writing renamed files ---------------------------------------------------------- */

typedef struct out_file {
    rp_st_writer *w;
    void *keep[4096]; /* buffers the writer reads at write time */
    int n_keep;
    unsigned char used[4096]; /* ref parameters written */
} out_file;

/* Adds tensor `name` = the rows of the ref tensors srcs[0..n) stacked (swap: the one
 * source's two row halves exchanged). Missing sources (absent from the preset) skip it. */
static void emit(out_file *o, const ref *r, const char *name, int n, const char *const *srcs, int swap) {
    int idx[4];
    int64_t rows = 0, cols = 1;
    for (int k = 0; k < n; k++) {
        idx[k] = ref_find(r, srcs[k]);
        if (idx[k] < 0) return;
        const rp_param_spec *s = &r->l.specs[idx[k]];
        rows += s->shape[0];
        cols = 1;
        for (int d = 1; d < s->ndim; d++) cols *= s->shape[d];
    }
    const rp_param_spec *s0 = &r->l.specs[idx[0]];
    float *buf = malloc(sizeof(float) * (size_t)(rows * cols));
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        const size_t m = rp_param_numel(&r->l.specs[idx[k]]);
        memcpy(buf + off, r->ptrs[idx[k]], m * sizeof(float));
        off += m;
        o->used[idx[k]] = 1;
    }
    if (swap) { /* diffusers (scale, shift) -> original (shift, scale) */
        const size_t half = off / 2;
        float *t = malloc(sizeof(float) * off);
        memcpy(t, buf + half, half * sizeof(float));
        memcpy(t + half, buf, half * sizeof(float));
        free(buf);
        buf = t;
    }
    int64_t shape[4];
    memcpy(shape, s0->shape, sizeof shape);
    shape[0] = rows;
    o->keep[o->n_keep++] = buf;
    rp_error err;
    ck_assert_msg(rp_st_writer_add(o->w, name, RP_DT_F32, s0->ndim, shape, buf, &err) == RP_OK, "%s", err.msg);
}

/* emit for the weight and the bias of a module ("%s.weight"/"%s.bias" of each source). */
static void emit_wb(out_file *o, const ref *r, const char *pre, const char *name, int n, const char *const *srcs,
                    int swap) {
    for (int wb = 0; wb < 2; wb++) {
        const char *suf = wb ? "bias" : "weight";
        char nm[256], s[4][256];
        const char *sp[4];
        snprintf(nm, sizeof nm, "%s%s.%s", pre, name, suf);
        for (int k = 0; k < n; k++) {
            snprintf(s[k], sizeof s[k], "%s.%s", srcs[k], suf);
            sp[k] = s[k];
        }
        emit(o, r, nm, n, sp, swap);
    }
}

#define SRC(...) (const char *const[]){__VA_ARGS__}
#define NSRC(...) (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
/* one module: original name <- diffusers module(s) */
#define MOD(o, r, pre, orig, swap, ...) emit_wb(o, r, pre, orig, NSRC(__VA_ARGS__), SRC(__VA_ARGS__), swap)

/* A norm weight (".weight" in diffusers) under the original name (BFL: ".scale"). */
static void emit_norm(out_file *o, const ref *r, const char *name, const char *src) {
    emit(o, r, name, 1, SRC(src), 0);
}

static void out_write(out_file *o, const ref *r, const char *path, int all_used) {
    rp_error err;
    ck_assert_msg(rp_st_writer_write(o->w, path, &err) == RP_OK, "%s", err.msg);
    rp_st_writer_free(o->w);
    for (int i = 0; i < o->n_keep; i++) free(o->keep[i]);
    if (all_used) /* the inverse map covered every parameter, so the load test covers them all */
        for (int i = 0; i < r->l.n; i++) ck_assert_msg(o->used[i], "%s not written", r->l.specs[i].name);
}

/* flux-tiny (or a variant) under BFL names, with prefix pre ("" BFL, ComfyUI's otherwise). */
static void write_flux_bfl(const ref *r, const char *path, const char *pre, int n_double, int n_single,
                           const char *bad_name) {
    static out_file o;
    memset(&o, 0, sizeof o);
    o.w = rp_st_writer_new();
    char a[8][160], b[160];
    MOD(&o, r, pre, "time_in.in_layer", 0, "time_text_embed.timestep_embedder.linear_1");
    MOD(&o, r, pre, "time_in.out_layer", 0, "time_text_embed.timestep_embedder.linear_2");
    MOD(&o, r, pre, "vector_in.in_layer", 0, "time_text_embed.text_embedder.linear_1");
    MOD(&o, r, pre, "vector_in.out_layer", 0, "time_text_embed.text_embedder.linear_2");
    MOD(&o, r, pre, "guidance_in.in_layer", 0, "time_text_embed.guidance_embedder.linear_1");
    MOD(&o, r, pre, "guidance_in.out_layer", 0, "time_text_embed.guidance_embedder.linear_2");
    MOD(&o, r, pre, "txt_in", 0, "context_embedder");
    MOD(&o, r, pre, "img_in", 0, "x_embedder");
    for (int i = 0; i < n_double; i++) {
        const char *D[] = {"norm1.linear", "norm1_context.linear", "attn.to_q", "attn.to_k", "attn.to_v",
                           "attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"};
        for (int k = 0; k < 8; k++) snprintf(a[k], sizeof a[k], "transformer_blocks.%d.%s", i, D[k]);
#define DB(x) (snprintf(b, sizeof b, "double_blocks.%d.%s", i, x), b)
#define TB(x) (snprintf(a[7], sizeof a[7], "transformer_blocks.%d.%s", i, x), a[7])
        MOD(&o, r, pre, DB("img_mod.lin"), 0, a[0]);
        MOD(&o, r, pre, DB("txt_mod.lin"), 0, a[1]);
        MOD(&o, r, pre, DB("img_attn.qkv"), 0, a[2], a[3], a[4]);
        snprintf(a[7], sizeof a[7], "transformer_blocks.%d.attn.add_v_proj", i);
        MOD(&o, r, pre, DB("txt_attn.qkv"), 0, a[5], a[6], a[7]);
        char nm[256];
        const char *NQ[][2] = {{"img_attn.norm.query_norm", "attn.norm_q"}, {"img_attn.norm.key_norm", "attn.norm_k"},
                               {"txt_attn.norm.query_norm", "attn.norm_added_q"},
                               {"txt_attn.norm.key_norm", "attn.norm_added_k"}};
        for (int k = 0; k < 4; k++) {
            char src[160];
            snprintf(nm, sizeof nm, "%sdouble_blocks.%d.%s.scale", pre, i, NQ[k][0]);
            snprintf(src, sizeof src, "transformer_blocks.%d.%s.weight", i, NQ[k][1]);
            emit_norm(&o, r, nm, src);
        }
        const char *P[][2] = {{"img_attn.proj", "attn.to_out.0"}, {"txt_attn.proj", "attn.to_add_out"},
                              {"img_mlp.0", "ff.net.0.proj"}, {"img_mlp.2", "ff.net.2"},
                              {"txt_mlp.0", "ff_context.net.0.proj"}, {"txt_mlp.2", "ff_context.net.2"}};
        for (int k = 0; k < 6; k++) MOD(&o, r, pre, DB(P[k][0]), 0, TB(P[k][1]));
#undef DB
#undef TB
    }
    for (int i = 0; i < n_single; i++) {
        char s[4][160], nm[256], src[160];
        const char *Q[] = {"attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"};
        for (int k = 0; k < 4; k++) snprintf(s[k], sizeof s[k], "single_transformer_blocks.%d.%s", i, Q[k]);
        snprintf(b, sizeof b, "single_blocks.%d.linear1", i);
        MOD(&o, r, pre, b, 0, s[0], s[1], s[2], s[3]);
        snprintf(b, sizeof b, "single_blocks.%d.modulation.lin", i);
        snprintf(s[0], sizeof s[0], "single_transformer_blocks.%d.norm.linear", i);
        MOD(&o, r, pre, b, 0, s[0]);
        snprintf(b, sizeof b, "single_blocks.%d.linear2", i);
        snprintf(s[0], sizeof s[0], "single_transformer_blocks.%d.proj_out", i);
        MOD(&o, r, pre, b, 0, s[0]);
        const char *NQ[][2] = {{"norm.query_norm", "attn.norm_q"}, {"norm.key_norm", "attn.norm_k"}};
        for (int k = 0; k < 2; k++) {
            snprintf(nm, sizeof nm, "%ssingle_blocks.%d.%s.scale", pre, i, NQ[k][0]);
            snprintf(src, sizeof src, "single_transformer_blocks.%d.%s.weight", i, NQ[k][1]);
            emit_norm(&o, r, nm, src);
        }
    }
    MOD(&o, r, pre, "final_layer.linear", 0, "proj_out");
    MOD(&o, r, pre, "final_layer.adaLN_modulation.1", 1, "norm_out.linear");
    if (bad_name) { /* one more tensor under a name the mapping does not know */
        char nm[256];
        snprintf(nm, sizeof nm, "%s%s", pre, bad_name);
        emit(&o, r, nm, 1, SRC("proj_out.bias"), 0);
    }
    (void)a;
    out_write(&o, r, path, 1);
}

/* An SD3 preset's weights under SD3's original names ("model.diffusion_model." prefix) plus
 * a VAE tensor the view must leave out; MMDiT-X's attn2 where r has it. */
static void write_sd3_orig(const ref *r, const char *path, int depth) {
    static out_file o;
    memset(&o, 0, sizeof o);
    o.w = rp_st_writer_new();
    const char *pre = "model.diffusion_model.";
    char b[160], s[3][160], nm[256];
    emit(&o, r, "model.diffusion_model.pos_embed", 1, SRC("pos_embed.pos_embed"), 0);
    MOD(&o, r, pre, "x_embedder.proj", 0, "pos_embed.proj");
    MOD(&o, r, pre, "t_embedder.mlp.0", 0, "time_text_embed.timestep_embedder.linear_1");
    MOD(&o, r, pre, "t_embedder.mlp.2", 0, "time_text_embed.timestep_embedder.linear_2");
    MOD(&o, r, pre, "y_embedder.mlp.0", 0, "time_text_embed.text_embedder.linear_1");
    MOD(&o, r, pre, "y_embedder.mlp.2", 0, "time_text_embed.text_embedder.linear_2");
    MOD(&o, r, pre, "context_embedder", 0, "context_embedder");
    for (int i = 0; i < depth; i++) {
        const int last = i == depth - 1;
        const char *QKV[2][3] = {{"attn.to_q", "attn.to_k", "attn.to_v"},
                                 {"attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"}};
        const char *BLK[2] = {"x_block", "context_block"};
        for (int c = 0; c < 2; c++) {
            for (int k = 0; k < 3; k++) snprintf(s[k], sizeof s[k], "transformer_blocks.%d.%s", i, QKV[c][k]);
            snprintf(b, sizeof b, "joint_blocks.%d.%s.attn.qkv", i, BLK[c]);
            MOD(&o, r, pre, b, 0, s[0], s[1], s[2]);
            const char *LN[2][2] = {{"ln_q", c ? "attn.norm_added_q" : "attn.norm_q"},
                                    {"ln_k", c ? "attn.norm_added_k" : "attn.norm_k"}};
            for (int k = 0; k < 2; k++) {
                snprintf(nm, sizeof nm, "%sjoint_blocks.%d.%s.attn.%s.weight", pre, i, BLK[c], LN[k][0]);
                snprintf(s[0], sizeof s[0], "transformer_blocks.%d.%s.weight", i, LN[k][1]);
                emit_norm(&o, r, nm, s[0]);
            }
            const char *P[][2] = {{"attn.proj", c ? "attn.to_add_out" : "attn.to_out.0"},
                                  {"adaLN_modulation.1", c ? "norm1_context.linear" : "norm1.linear"},
                                  {"mlp.fc1", c ? "ff_context.net.0.proj" : "ff.net.0.proj"},
                                  {"mlp.fc2", c ? "ff_context.net.2" : "ff.net.2"}};
            for (int k = 0; k < 4; k++) {
                snprintf(b, sizeof b, "joint_blocks.%d.%s.%s", i, BLK[c], P[k][0]);
                snprintf(s[0], sizeof s[0], "transformer_blocks.%d.%s", i, P[k][1]);
                /* the last block's context norm is AdaLayerNormContinuous: (shift, scale) there */
                MOD(&o, r, pre, b, c && k == 1 && last, s[0]);
            }
        }
        /* MMDiT-X (a dual-attention block): x_block.attn2, q, k, v fused as attn.qkv; MOD and
         * emit_norm skip what r lacks (a plain block, no qk_norm) */
        for (int k = 0; k < 3; k++) snprintf(s[k], sizeof s[k], "transformer_blocks.%d.attn2.to_%c", i, "qkv"[k]);
        snprintf(b, sizeof b, "joint_blocks.%d.x_block.attn2.qkv", i);
        MOD(&o, r, pre, b, 0, s[0], s[1], s[2]);
        for (int k = 0; k < 2; k++) {
            snprintf(nm, sizeof nm, "%sjoint_blocks.%d.x_block.attn2.ln_%c.weight", pre, i, "qk"[k]);
            snprintf(s[0], sizeof s[0], "transformer_blocks.%d.attn2.norm_%c.weight", i, "qk"[k]);
            emit_norm(&o, r, nm, s[0]);
        }
        snprintf(b, sizeof b, "joint_blocks.%d.x_block.attn2.proj", i);
        snprintf(s[0], sizeof s[0], "transformer_blocks.%d.attn2.to_out.0", i);
        MOD(&o, r, pre, b, 0, s[0]);
    }
    MOD(&o, r, pre, "final_layer.linear", 0, "proj_out");
    MOD(&o, r, pre, "final_layer.adaLN_modulation.1", 1, "norm_out.linear");
    emit(&o, r, "first_stage_model.decoder.conv_in.bias", 1, SRC("proj_out.bias"), 0);
    out_write(&o, r, path, 1);
}

/* ---- tests ---------------------------------------------------------------------------- */

/* Writes r's tensors as n_shards shards (tensor i in shard i % n_shards) and an index. */
static void write_sharded(const ref *r, const char *index_name, int n_shards) {
    char idx[1 << 16];
    size_t k = (size_t)snprintf(idx, sizeof idx, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    for (int s = 0; s < n_shards; s++) {
        rp_st_writer *w = rp_st_writer_new();
        char shard[64];
        snprintf(shard, sizeof shard, "m-%05d-of-%05d.safetensors", s + 1, n_shards);
        rp_error err;
        for (int i = s; i < r->l.n; i += n_shards) {
            const rp_param_spec *p = &r->l.specs[i];
            ck_assert(rp_st_writer_add(w, p->name, RP_DT_F32, p->ndim, p->shape, r->ptrs[i], &err) == RP_OK);
            k += (size_t)snprintf(idx + k, sizeof idx - k, "%s\"%s\": \"%s\"", k > 60 ? ", " : "", p->name, shard);
        }
        if (s == 0) ck_assert(rp_st_writer_meta(w, "repro.model", "from-shard-1", &err) == RP_OK);
        ck_assert_msg(rp_st_writer_write(w, tmp_path(shard), &err) == RP_OK, "%s", err.msg);
        rp_st_writer_free(w);
    }
    k += (size_t)snprintf(idx + k, sizeof idx - k, "}}");
    ck_assert(k < sizeof idx);
    FILE *fp = fopen(tmp_path(index_name), "w");
    ck_assert_ptr_nonnull(fp);
    fputs(idx, fp);
    fclose(fp);
}

START_TEST(test_sharded_bitwise) {
    const char *models[] = {"flux-tiny", "sd3-tiny", "dit-tiny"};
    for (int m = 0; m < 3; m++) {
        ref r;
        ref_make(&r, models[m], 0);
        write_sharded(&r, "m.safetensors.index.json", 3);
        ck_assert_msg(loads_equal(&r, tmp_path("m.safetensors.index.json")), "%s", models[m]);
        rp_st_file *f = NULL;
        ck_assert(rp_weights_open(tmp_path("m.safetensors.index.json"), &f, NULL) == RP_OK);
        ck_assert_str_eq(rp_st_meta(f, "repro.model"), "from-shard-1"); /* metadata merged */
        ck_assert_int_eq(f->n, r.l.n);
        rp_st_close(f);
        ref_free(&r);
    }
}
END_TEST

START_TEST(test_sharded_errors) {
    ref r;
    ref_make(&r, "flux-tiny", 0);
    write_sharded(&r, "e.safetensors.index.json", 3);
    rp_error err;
    rp_st_file *f = NULL;
    /* a missing shard names the index, the shard and a tensor it holds */
    ck_assert_int_eq(unlink(tmp_path("m-00002-of-00003.safetensors")), 0);
    ck_assert_int_eq(rp_weights_open(tmp_path("e.safetensors.index.json"), &f, &err), RP_ERR_IO);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(err.msg, "e.safetensors.index.json") && strstr(err.msg, "shard 'm-00002-of-00003.safetensors'") &&
                      strstr(err.msg, r.l.specs[1].name) && strstr(err.msg, "cannot open"),
                  "%s", err.msg);
    /* a tensor its shard does not hold */
    FILE *fp = fopen(tmp_path("bad.json"), "w");
    fputs("{\"weight_map\": {\"x_embedder.weight\": \"m-00001-of-00003.safetensors\"}}", fp);
    fclose(fp);
    ck_assert_int_eq(rp_weights_open(tmp_path("bad.json"), &f, &err), RP_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, "tensor 'x_embedder.weight' is mapped to shard 'm-00001-of-00003.safetensors'"),
                  "%s", err.msg);
    /* a shard outside the index's directory, and an index without weight_map */
    fp = fopen(tmp_path("bad.json"), "w");
    fputs("{\"weight_map\": {\"x_embedder.weight\": \"../m.safetensors\"}}", fp);
    fclose(fp);
    ck_assert_int_eq(rp_weights_open(tmp_path("bad.json"), &f, &err), RP_ERR_FORMAT);
    ck_assert_msg(strstr(err.msg, "x_embedder.weight") && strstr(err.msg, "without '/'"), "%s", err.msg);
    fp = fopen(tmp_path("bad.json"), "w");
    fputs("{\"metadata\": {}}", fp);
    fclose(fp);
    ck_assert_int_eq(rp_weights_open(tmp_path("bad.json"), &f, &err), RP_ERR_FORMAT);
    ck_assert_msg(strstr(err.msg, "weight_map"), "%s", err.msg);
    ref_free(&r);
}
END_TEST

START_TEST(test_flux_bfl_bitwise) {
    ref r;
    ref_make(&r, "flux-tiny", 0);
    write_flux_bfl(&r, tmp_path("flux1-tiny.safetensors"), "", 2, 2, NULL);
    ck_assert(loads_equal(&r, tmp_path("flux1-tiny.safetensors")));
    write_flux_bfl(&r, tmp_path("flux1-tiny-comfy.safetensors"), "model.diffusion_model.", 2, 2, NULL);
    ck_assert(loads_equal(&r, tmp_path("flux1-tiny-comfy.safetensors")));
    ref_free(&r);
    /* FLUX.1-schnell's shape: no guidance_in / guidance_embedder */
    ref_make(&r, "flux-tiny-schnell", 0);
    ck_assert_int_lt(ref_find(&r, "time_text_embed.guidance_embedder.linear_1.weight"), 0);
    write_flux_bfl(&r, tmp_path("flux1-tiny-schnell.safetensors"), "", 2, 2, NULL);
    ck_assert(loads_equal(&r, tmp_path("flux1-tiny-schnell.safetensors")));
    ref_free(&r);
}
END_TEST

START_TEST(test_sd3_original_bitwise) {
    ref r;
    ref_make(&r, "sd3-tiny", 0);
    rp_sd3_config c;
    ck_assert(rp_sd3_preset("sd3-tiny", &c, NULL) == RP_OK);
    write_sd3_orig(&r, tmp_path("sd3-orig.safetensors"), c.depth);
    ck_assert(loads_equal(&r, tmp_path("sd3-orig.safetensors")));
    rp_st_file *f = NULL;
    ck_assert(rp_weights_open(tmp_path("sd3-orig.safetensors"), &f, NULL) == RP_OK);
    ck_assert_ptr_null(rp_st_find(f, "first_stage_model.decoder.conv_in.bias")); /* not the transformer's */
    rp_st_close(f);
    ref_free(&r);
}
END_TEST

START_TEST(test_unknown_name_did_you_mean) {
    ref r;
    ref_make(&r, "flux-tiny", 0);
    write_flux_bfl(&r, tmp_path("typo.safetensors"), "model.diffusion_model.", 2, 2, "double_blocks.1.img_attn.qkvv.weight");
    rp_st_file *f = NULL;
    rp_error err;
    ck_assert_int_eq(rp_weights_open(tmp_path("typo.safetensors"), &f, &err), RP_ERR_NOT_FOUND);
    ck_assert_ptr_null(f);
    ck_assert_msg(strstr(err.msg, "typo.safetensors") &&
                      strstr(err.msg, "'model.diffusion_model.double_blocks.1.img_attn.qkvv.weight'") &&
                      strstr(err.msg, "did you mean 'double_blocks.1.img_attn.qkv.weight'"),
                  "%s", err.msg);
    /* a diffusers-named file missing a tensor suggests the near name it has */
    rp_st_writer *w = rp_st_writer_new();
    const int i = ref_find(&r, "x_embedder.weight");
    const rp_param_spec *p = &r.l.specs[i];
    ck_assert(rp_st_writer_add(w, "x_embedder.weights", RP_DT_F32, p->ndim, p->shape, r.ptrs[i], &err) == RP_OK);
    ck_assert(rp_st_writer_write(w, tmp_path("near.safetensors"), &err) == RP_OK);
    rp_st_writer_free(w);
    ck_assert(rp_weights_open(tmp_path("near.safetensors"), &f, &err) == RP_OK);
    rp_param_list one = {0};
    rp_params_add(&one, RP_INIT_FANIN, 1.0f, p->ndim, p->shape, "x_embedder.weight");
    float *block = NULL, *ptrs[1];
    ck_assert_int_eq(rp_params_load(&one, f, &block, ptrs, &err), RP_ERR_NOT_FOUND);
    ck_assert_msg(strstr(err.msg, "missing tensor 'x_embedder.weight' (did you mean 'x_embedder.weights'?)"), "%s",
                  err.msg);
    rp_params_free(&one);
    rp_st_close(f);
    ref_free(&r);
}
END_TEST

START_TEST(test_shape_mismatch_renamed) {
    /* flux-tiny's BFL file loaded as a model of other width: the diffusers-named tensor,
     * its shapes and the file are named */
    ref r;
    ref_make(&r, "flux-tiny", 0);
    write_flux_bfl(&r, tmp_path("flux1-shape.safetensors"), "", 2, 2, NULL);
    rp_param_list l = {0};
    rp_params_add(&l, RP_INIT_FANIN, 1.0f, 2, (int64_t[]){128, 64}, "transformer_blocks.0.attn.to_k.weight");
    rp_st_file *f = NULL;
    rp_error err;
    ck_assert(rp_weights_open(tmp_path("flux1-shape.safetensors"), &f, &err) == RP_OK);
    float *block = NULL, *ptrs[1];
    ck_assert_int_eq(rp_params_load(&l, f, &block, ptrs, &err), RP_ERR_SHAPE);
    ck_assert_msg(strstr(err.msg, "flux1-shape.safetensors") &&
                      strstr(err.msg, "tensor 'transformer_blocks.0.attn.to_k.weight' has shape [64, 64], model "
                                      "needs [128, 64]"),
                  "%s", err.msg);
    rp_params_free(&l);
    rp_st_close(f);
    ref_free(&r);
}
END_TEST

/* rp_sd3_load of preset `model` from path: the status, err filled. */
static rp_status load_sd3_path(const char *model, const char *path, rp_error *err) {
    rp_sd3_config c;
    ck_assert(rp_sd3_preset(model, &c, NULL) == RP_OK);
    rp_st_file *f = NULL;
    rp_status s = rp_weights_open(path, &f, err);
    if (s != RP_OK) return s;
    rp_sd3 *m = NULL;
    s = rp_sd3_load(&c, f, &m, err);
    ck_assert(s == RP_OK ? m != NULL : m == NULL);
    rp_sd3_free(m);
    rp_st_close(f);
    return s;
}

/* SD3.5 Medium's MMDiT-X layout (sd3.5-medium-tiny: attn2 and a 9-way norm1 in blocks 0, 1,
 * qk_norm on attn2 too) under SD3's original names (x_block.attn2.qkv / ln_q / ln_k / proj,
 * the 9-chunk adaLN_modulation) and as diffusers-named shards loads bitwise equal to the
 * single diffusers-named file, and the model loads from each. */
START_TEST(test_sd35_medium_bitwise) {
    ref r;
    ref_make(&r, "sd3.5-medium-tiny", 0);
    rp_sd3_config c;
    ck_assert(rp_sd3_preset("sd3.5-medium-tiny", &c, NULL) == RP_OK);
    ck_assert_int_eq(c.dual_attention_layers, 2);
    ck_assert(ref_find(&r, "transformer_blocks.1.attn2.norm_k.weight") >= 0); /* the layout under test */
    ck_assert(ref_find(&r, "transformer_blocks.2.attn2.to_q.weight") < 0);
    ck_assert_int_eq(r.l.specs[ref_find(&r, "transformer_blocks.0.norm1.linear.weight")].shape[0],
                     9 * (int64_t)c.heads * c.head_dim);
    write_sd3_orig(&r, tmp_path("sd35m-orig.safetensors"), c.depth); /* checks every tensor was written */
    ck_assert(loads_equal(&r, tmp_path("sd35m-orig.safetensors")));
    write_sharded(&r, "sd35m.safetensors.index.json", 3);
    ck_assert(loads_equal(&r, tmp_path("sd35m.safetensors.index.json")));
    const char *paths[] = {r.path, tmp_path("sd35m-orig.safetensors"), tmp_path("sd35m.safetensors.index.json")};
    for (int k = 0; k < 3; k++) {
        rp_error err;
        ck_assert_msg(load_sd3_path("sd3.5-medium-tiny", paths[k], &err) == RP_OK, "%s: %s", paths[k], err.msg);
    }
    ref_free(&r);
}
END_TEST

/* Checkpoints that disagree with the preset on which blocks are MMDiT-X: errors naming the
 * file, the block's attn2 tensor and the presets that fit; attn2 present with a 6-way norm1:
 * the shape error naming norm1.linear and both shapes. Under diffusers and original names. */
START_TEST(test_sd35_medium_mismatch) {
    ref x, p;
    ref_make(&x, "sd3.5-medium-tiny", 0);
    ref_make(&p, "sd3-tiny", 0);
    rp_sd3_config c;
    ck_assert(rp_sd3_preset("sd3.5-medium-tiny", &c, NULL) == RP_OK);
    write_sd3_orig(&x, tmp_path("mx-orig.safetensors"), c.depth);
    write_sd3_orig(&p, tmp_path("plain-orig.safetensors"), 2);
    rp_error err;
    /* an MMDiT-X checkpoint as plain SD3 */
    const char *mx[] = {x.path, tmp_path("mx-orig.safetensors")};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(load_sd3_path("sd3-tiny", mx[k], &err), RP_ERR_SHAPE);
        ck_assert_msg(strstr(err.msg, mx[k]) && strstr(err.msg, "block 0 has 'transformer_blocks.0.attn2.to_q.weight'") &&
                          strstr(err.msg, "model 'sd3-tiny' has dual attention in 0 block(s)") &&
                          strstr(err.msg, "sd3.5-medium"),
                      "%s", err.msg);
    }
    /* a plain checkpoint as MMDiT-X */
    const char *pl[] = {p.path, tmp_path("plain-orig.safetensors")};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(load_sd3_path("sd3.5-medium-tiny", pl[k], &err), RP_ERR_SHAPE);
        ck_assert_msg(strstr(err.msg, pl[k]) &&
                          strstr(err.msg, "model 'sd3.5-medium-tiny' has dual attention (attn2) in blocks 0..1, but "
                                          "block 0 has no 'transformer_blocks.0.attn2.to_q.weight'"),
                      "%s", err.msg);
    }
    /* attn2 in block 1 but a 6-way norm1 there */
    rp_param_list l = {0};
    rp_sd3_param_specs(&c, &l);
    const int64_t D = (int64_t)c.heads * c.head_dim;
    for (int i = 0; i < l.n; i++)
        if (!strncmp(l.specs[i].name, "transformer_blocks.1.norm1.linear.", 34)) l.specs[i].shape[0] = 6 * D;
    ref bad;
    ref_from_list(&bad, l, "sd3.5-medium-tiny", "mx-norm6.safetensors");
    write_sd3_orig(&bad, tmp_path("mx-norm6-orig.safetensors"), c.depth);
    const char *b6[] = {bad.path, tmp_path("mx-norm6-orig.safetensors")};
    char want[160];
    snprintf(want, sizeof want, "tensor 'transformer_blocks.1.norm1.linear.weight' has shape [%lld, %lld], model needs "
             "[%lld, %lld]", (long long)(6 * D), (long long)D, (long long)(9 * D), (long long)D);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(load_sd3_path("sd3.5-medium-tiny", b6[k], &err), RP_ERR_SHAPE);
        ck_assert_msg(strstr(err.msg, b6[k]) && strstr(err.msg, want), "%s", err.msg);
    }
    ref_free(&bad);
    ref_free(&x);
    ref_free(&p);
}
END_TEST

/* ---- the VAE under the original (LDM / CompVis) names -------------------------------- */

/* What write_vae_ldm spoils: one tensor left out, written with a wrong shape, or misspelt. */
typedef struct ldm_fault {
    const char *drop;    /* LDM name not written */
    const char *reshape; /* LDM name written with shape `shape` (same element count) */
    int ndim;
    int64_t shape[4];
    const char *misspell; /* an extra tensor under this name */
} ldm_fault;

/* Adds tensor name = ref parameter src with shape (ndim, shape) (NULL: src's own). */
static void emit_shaped(out_file *o, const ref *r, const char *name, const char *src, int ndim, const int64_t *shape) {
    const int i = ref_find(r, src);
    ck_assert_msg(i >= 0, "%s", src);
    const rp_param_spec *s = &r->l.specs[i];
    rp_error err;
    o->used[i] = 1;
    ck_assert_msg(rp_st_writer_add(o->w, name, RP_DT_F32, shape ? ndim : s->ndim, shape ? shape : s->shape,
                                   r->ptrs[i], &err) == RP_OK, "%s", err.msg);
}

/* One LDM module <- one diffusers module (weight and bias); attention projections as 1x1
 * convs [C, C, 1, 1]. Honours the fault. */
static void emit_ldm(out_file *o, const ref *r, const char *pre, const char *ldm, const char *dif, int conv1x1,
                     const ldm_fault *fault) {
    for (int wb = 0; wb < 2; wb++) {
        char nm[256], src[256];
        snprintf(nm, sizeof nm, "%s.%s", ldm, wb ? "bias" : "weight");
        snprintf(src, sizeof src, "%s.%s", dif, wb ? "bias" : "weight");
        const int i = ref_find(r, src);
        if (i < 0) continue; /* conv_shortcut where in == out */
        if (fault && fault->drop && !strcmp(fault->drop, nm)) { o->used[i] = 1; continue; }
        char full[300];
        snprintf(full, sizeof full, "%s%s", pre, nm);
        const rp_param_spec *s = &r->l.specs[i];
        const int64_t conv[4] = {s->shape[0], s->ndim > 1 ? s->shape[1] : 1, 1, 1};
        if (fault && fault->reshape && !strcmp(fault->reshape, nm)) emit_shaped(o, r, full, src, fault->ndim, fault->shape);
        else if (conv1x1 && !wb) emit_shaped(o, r, full, src, 4, conv);
        else emit_shaped(o, r, full, src, 0, NULL);
    }
}

/* A resnet's modules, LDM prefix ldm <- diffusers prefix dif. */
static void emit_ldm_resnet(out_file *o, const ref *r, const char *pre, const char *ldm, const char *dif,
                            const ldm_fault *fault) {
    const char *M[][2] = {{"norm1", "norm1"}, {"conv1", "conv1"}, {"norm2", "norm2"}, {"conv2", "conv2"},
                          {"nin_shortcut", "conv_shortcut"}};
    for (int k = 0; k < 5; k++) {
        char a[200], b[200];
        snprintf(a, sizeof a, "%s.%s", ldm, M[k][0]);
        snprintf(b, sizeof b, "%s.%s", dif, M[k][1]);
        emit_ldm(o, r, pre, a, b, 0, fault);
    }
}

/* Adds to o the VAE of r (a vae-* preset of n_levels levels, layers_per_block + 1 resnets
 * each) under the LDM names with prefix pre: diffusers' up_blocks.I is LDM's up.(L-1-I),
 * mid_block.resnets.{0,1} is mid.block_{1,2}, attentions.0.{group_norm, to_q, to_k, to_v,
 * to_out.0} is mid.attn_1.{norm, q, k, v, proj_out} (weights [C, C, 1, 1]), conv_shortcut is
 * nin_shortcut, conv_norm_out is norm_out. Then a few encoder tensors (not r's: repro does
 * not read them) under LDM names, which the view must carry under diffusers' names. */
static void add_vae_ldm(out_file *o, const ref *r, const char *pre, const rp_vae_config *c, const ldm_fault *fault) {
    const int L = c->n_levels;
    char a[200], b[200];
    emit_ldm(o, r, pre, "post_quant_conv", "post_quant_conv", 0, fault);
    emit_ldm(o, r, pre, "decoder.conv_in", "decoder.conv_in", 0, fault);
    emit_ldm_resnet(o, r, pre, "decoder.mid.block_1", "decoder.mid_block.resnets.0", fault);
    emit_ldm_resnet(o, r, pre, "decoder.mid.block_2", "decoder.mid_block.resnets.1", fault);
    emit_ldm(o, r, pre, "decoder.mid.attn_1.norm", "decoder.mid_block.attentions.0.group_norm", 0, fault);
    const char *A[][2] = {{"q", "to_q"}, {"k", "to_k"}, {"v", "to_v"}, {"proj_out", "to_out.0"}};
    for (int k = 0; k < 4; k++) {
        snprintf(a, sizeof a, "decoder.mid.attn_1.%s", A[k][0]);
        snprintf(b, sizeof b, "decoder.mid_block.attentions.0.%s", A[k][1]);
        emit_ldm(o, r, pre, a, b, 1, fault);
    }
    for (int lvl = 0; lvl < L; lvl++) {
        const int up = L - 1 - lvl; /* LDM's level */
        for (int j = 0; j <= c->layers_per_block; j++) {
            snprintf(a, sizeof a, "decoder.up.%d.block.%d", up, j);
            snprintf(b, sizeof b, "decoder.up_blocks.%d.resnets.%d", lvl, j);
            emit_ldm_resnet(o, r, pre, a, b, fault);
        }
        if (lvl < L - 1) {
            snprintf(a, sizeof a, "decoder.up.%d.upsample.conv", up);
            snprintf(b, sizeof b, "decoder.up_blocks.%d.upsamplers.0.conv", lvl);
            emit_ldm(o, r, pre, a, b, 0, fault);
        }
    }
    emit_ldm(o, r, pre, "decoder.norm_out", "decoder.conv_norm_out", 0, fault);
    emit_ldm(o, r, pre, "decoder.conv_out", "decoder.conv_out", 0, fault);
    /* the encoder: any bytes of the right count; a 1x1-conv attention weight among them */
    const char *src = "decoder.mid_block.attentions.0.to_q.weight";
    const int i = ref_find(r, src);
    const int64_t C = r->l.specs[i].shape[0];
    const char *E[] = {"encoder.mid.attn_1.q.weight", "encoder.down.1.block.0.nin_shortcut.weight",
                       "encoder.down.0.downsample.conv.weight", "encoder.norm_out.weight", "quant_conv.weight"};
    for (int k = 0; k < 5; k++) {
        snprintf(a, sizeof a, "%s%s", pre, E[k]);
        emit_shaped(o, r, a, src, 4, (int64_t[]){C, C, 1, 1});
    }
    if (fault && fault->misspell) {
        snprintf(a, sizeof a, "%s%s", pre, fault->misspell);
        emit_shaped(o, r, a, "decoder.conv_in.bias", 0, NULL);
    }
}

/* r's VAE under LDM names as path: bare (pre "", BFL's ae.safetensors) or inside a
 * single-file checkpoint (pre "first_stage_model.") next to unrelated tensors: an SD3
 * transformer tensor under its original name and a text encoder's. */
static void write_vae_ldm(const ref *r, const rp_vae_config *c, const char *path, const char *pre,
                          const ldm_fault *fault) {
    static out_file o;
    memset(&o, 0, sizeof o);
    o.w = rp_st_writer_new();
    add_vae_ldm(&o, r, pre, c, fault);
    if (*pre) {
        const int i = ref_find(r, "decoder.mid_block.attentions.0.to_q.weight");
        const int64_t C = r->l.specs[i].shape[0];
        rp_error err;
        /* (3 * C/4, C): q, k, v thirds of C/4 rows; the bytes are any C*C floats' first part */
        ck_assert(rp_st_writer_add(o.w, "model.diffusion_model.joint_blocks.0.x_block.attn.qkv.weight", RP_DT_F32, 2,
                                   (int64_t[]){3 * (C / 4), C}, r->ptrs[i], &err) == RP_OK);
        ck_assert(rp_st_writer_add(o.w, "text_encoders.clip_l.transformer.text_model.final_layer_norm.weight",
                                   RP_DT_F32, 1, (int64_t[]){C}, r->ptrs[i], &err) == RP_OK);
        /* a VAE training checkpoint's loss module: not the VAE's, left out */
        ck_assert(rp_st_writer_add(o.w, "first_stage_model.loss.logvar", RP_DT_F32, 0, NULL, r->ptrs[i], &err) ==
                  RP_OK);
    }
    out_write(&o, r, path, !fault);
}

/* vae-tiny-16 (no post_quant_conv; FLUX / SD3 shape) as ae.safetensors and vae-tiny (with
 * post_quant_conv; SD 1.x shape) inside a single-file checkpoint: every parameter loads
 * bitwise as from the diffusers-named file, through the VAE loader too; the encoder is
 * carried under diffusers' names; the checkpoint's other models are kept apart. */
START_TEST(test_vae_ldm_bitwise) {
    const char *presets[] = {"vae-tiny-16", "vae-tiny"};
    const char *pres[] = {"", "first_stage_model."};
    for (int k = 0; k < 2; k++) {
        ref r;
        ref_make(&r, presets[k], 0);
        rp_vae_config c;
        ck_assert(rp_vae_preset(presets[k], &c, NULL) == RP_OK);
        char path[64];
        snprintf(path, sizeof path, "ae-ldm-%d.safetensors", k);
        write_vae_ldm(&r, &c, tmp_path(path), pres[k], NULL);
        ck_assert_msg(loads_equal(&r, tmp_path(path)), "%s%s", pres[k], presets[k]);
        rp_st_file *f = NULL;
        rp_error err;
        ck_assert_msg(rp_weights_open(tmp_path(path), &f, &err) == RP_OK, "%s", err.msg);
        rp_vae *m = NULL;
        ck_assert_msg(rp_vae_load(&c, f, &m, &err) == RP_OK, "%s", err.msg);
        rp_vae_free(m);
        const rp_st_tensor *q = rp_st_find(f, "encoder.mid_block.attentions.0.to_q.weight");
        ck_assert(q && q->ndim == 2);
        ck_assert_ptr_nonnull(rp_st_find(f, "encoder.down_blocks.1.resnets.0.conv_shortcut.weight"));
        ck_assert_ptr_nonnull(rp_st_find(f, "encoder.down_blocks.0.downsamplers.0.conv.weight"));
        ck_assert_ptr_nonnull(rp_st_find(f, "encoder.conv_norm_out.weight"));
        ck_assert_ptr_nonnull(rp_st_find(f, "quant_conv.weight"));
        if (*pres[k]) { /* the transformer's tensor mapped under its own scheme; the text encoder left out */
            ck_assert_ptr_nonnull(rp_st_find(f, "transformer_blocks.0.attn.to_k.weight"));
            ck_assert_ptr_null(rp_st_find(f, "text_encoders.clip_l.transformer.text_model.final_layer_norm.weight"));
            ck_assert_ptr_null(rp_st_find(f, "first_stage_model.decoder.conv_in.weight"));
            ck_assert_ptr_null(rp_st_find(f, "loss.logvar"));
            ck_assert_ptr_null(rp_st_find(f, "first_stage_model.loss.logvar"));
        }
        rp_st_close(f);
        ref_free(&r);
    }
}
END_TEST

/* Writes out = a's tensors except those under prefix pre, then b's under pre (metadata
 * dropped): b's model replaces what a holds under pre. */
static void merge_files(const char *a, const char *b, const char *pre, const char *out) {
    rp_st_file *fa = NULL, *fb = NULL;
    rp_error err;
    ck_assert_msg(rp_st_open(a, &fa, &err) == RP_OK, "%s", err.msg);
    ck_assert_msg(rp_st_open(b, &fb, &err) == RP_OK, "%s", err.msg);
    rp_st_writer *w = rp_st_writer_new();
    const rp_st_file *fs[2] = {fa, fb};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < fs[k]->n; i++) {
            const rp_st_tensor *t = &fs[k]->tensors[i];
            const int under = !strncmp(t->name, pre, strlen(pre));
            if (under != k) continue; /* a: not under pre; b: under pre */
            ck_assert(rp_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, &err) == RP_OK);
        }
    ck_assert_msg(rp_st_writer_write(w, out, &err) == RP_OK, "%s", err.msg);
    rp_st_writer_free(w);
    rp_st_close(fa);
    rp_st_close(fb);
}

/* SD3's single file as it ships: the transformer under SD3's original names and the VAE
 * under first_stage_model.'s LDM names in one file; each model loads bitwise from it. */
START_TEST(test_sd3_single_file_with_vae) {
    ref t, v;
    ref_make(&t, "sd3-tiny", 0);
    ref_make(&v, "vae-tiny-16", 0);
    rp_sd3_config c;
    rp_vae_config vc;
    ck_assert(rp_sd3_preset("sd3-tiny", &c, NULL) == RP_OK);
    ck_assert(rp_vae_preset("vae-tiny-16", &vc, NULL) == RP_OK);
    write_sd3_orig(&t, tmp_path("single-t.safetensors"), c.depth);
    write_vae_ldm(&v, &vc, tmp_path("single-v.safetensors"), "first_stage_model.", NULL);
    merge_files(tmp_path("single-t.safetensors"), tmp_path("single-v.safetensors"), "first_stage_model.",
                tmp_path("sd3-single.safetensors"));
    ck_assert(loads_equal(&t, tmp_path("sd3-single.safetensors")));
    ck_assert(loads_equal(&v, tmp_path("sd3-single.safetensors")));
    ref_free(&t);
    ref_free(&v);
}
END_TEST

/* Opens path (an LDM VAE) and loads vae-tiny-16 from it; returns the status, err filled. */
static rp_status load_vae_path(const char *path, rp_error *err) {
    rp_vae_config c;
    ck_assert(rp_vae_preset("vae-tiny-16", &c, NULL) == RP_OK);
    rp_st_file *f = NULL;
    rp_status s = rp_weights_open(path, &f, err);
    if (s != RP_OK) return s;
    rp_vae *m = NULL;
    s = rp_vae_load(&c, f, &m, err);
    rp_vae_free(m);
    rp_st_close(f);
    return s;
}

/* r's VAE written under LDM names (prefix, fault) to tmp file `file` must fail to load with
 * status code and a message naming the file and containing want (and want2 when set). */
static void ldm_load_fails(const ref *r, const rp_vae_config *c, const char *file, const char *prefix,
                           const ldm_fault *fault, rp_status code, const char *want, const char *want2) {
    rp_error err;
    write_vae_ldm(r, c, tmp_path(file), prefix, fault);
    ck_assert_int_eq(load_vae_path(tmp_path(file), &err), code);
    ck_assert_msg(strstr(err.msg, file) && strstr(err.msg, want) && (!want2 || strstr(err.msg, want2)), "%s",
                  err.msg);
}

/* A missing tensor, a wrong shape, an attention weight that is no 1x1 conv and a misspelt
 * name: each an error naming the file, the tensor and (shapes) both shapes. */
START_TEST(test_vae_ldm_errors) {
    ref r;
    ref_make(&r, "vae-tiny-16", 0);
    rp_vae_config c;
    ck_assert(rp_vae_preset("vae-tiny-16", &c, NULL) == RP_OK);
    /* LDM's up.0 is diffusers' last up block */
    const ldm_fault drop = {.drop = "decoder.up.0.block.1.conv1.weight"};
    ldm_load_fails(&r, &c, "ae-drop.safetensors", "first_stage_model.", &drop, RP_ERR_NOT_FOUND,
                   "missing tensor 'decoder.up_blocks.3.resnets.1.conv1.weight'", NULL);
    /* decoder.conv_in (64, 16, 3, 3) written as (64, 16, 9, 1) */
    const ldm_fault shape = {.reshape = "decoder.conv_in.weight", .ndim = 4, .shape = {64, 16, 9, 1}};
    ldm_load_fails(&r, &c, "ae-shape.safetensors", "", &shape, RP_ERR_SHAPE,
                   "tensor 'decoder.conv_in.weight' has shape [64, 16, 9, 1], model needs [64, 16, 3, 3]", NULL);
    /* the attention's q (64, 64) written as a 2x2 conv (64, 16, 2, 2) */
    const ldm_fault conv = {.reshape = "decoder.mid.attn_1.q.weight", .ndim = 4, .shape = {64, 16, 2, 2}};
    ldm_load_fails(&r, &c, "ae-conv.safetensors", "", &conv, RP_ERR_SHAPE,
                   "tensor 'decoder.mid.attn_1.q.weight' has shape [64, 16, 2, 2], not a 1x1 conv [C, C, 1, 1]", NULL);
    const ldm_fault typo = {.misspell = "decoder.up.3.block.0.conv11.weight"};
    ldm_load_fails(&r, &c, "ae-typo.safetensors", "first_stage_model.", &typo, RP_ERR_NOT_FOUND,
                   "'first_stage_model.decoder.up.3.block.0.conv11.weight' is not a name repro knows under the LDM "
                   "VAE naming",
                   "did you mean 'decoder.up.3.block.0.conv1.weight'");
    ref_free(&r);
}
END_TEST

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_st_compose_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) { perror("mkdtemp"); return 1; }
    Suite *s = suite_create("st_compose");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sharded_bitwise);
    tcase_add_test(tc, test_sharded_errors);
    tcase_add_test(tc, test_flux_bfl_bitwise);
    tcase_add_test(tc, test_sd3_original_bitwise);
    tcase_add_test(tc, test_unknown_name_did_you_mean);
    tcase_add_test(tc, test_shape_mismatch_renamed);
    tcase_add_test(tc, test_sd35_medium_bitwise);
    tcase_add_test(tc, test_sd35_medium_mismatch);
    tcase_add_test(tc, test_vae_ldm_bitwise);
    tcase_add_test(tc, test_vae_ldm_errors);
    tcase_add_test(tc, test_sd3_single_file_with_vae);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return failed ? 1 : 0;
}
