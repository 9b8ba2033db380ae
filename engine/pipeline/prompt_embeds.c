/* prompt_embeds.c — see prompt_embeds.h. */
#include "prompt_embeds.h"

#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

/* Reads tensor name of f (rank ndim) into a new array; its shape into shape. */
static rp_status read_tensor(const rp_st_file *f, const char *name, int ndim, int64_t *shape, float **out,
                             rp_error *err) {
    const rp_st_tensor *t = NULL;
    RP_TRY(rp_st_read_f32_alloc(f, name, out, &t, err));
    if (t->ndim != ndim) {
        free(*out);
        *out = NULL;
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has rank %d, prompt embeddings need rank %d", f->path,
                       name, t->ndim, ndim);
    }
    for (int d = 0; d < ndim; d++) shape[d] = t->shape[d];
    return RP_OK;
}

void rp_prompt_embeds_free(rp_prompt_embeds *e) {
    if (!e) return;
    free(e->context);
    free(e->pooled);
    free(e->neg_context);
    free(e->neg_pooled);
    memset(e, 0, sizeof *e);
}

rp_status rp_prompt_embeds_read(const char *path, int Dctx, int Dpool, rp_prompt_embeds *out, rp_error *err) {
    memset(out, 0, sizeof *out);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    int64_t sc[3] = {0}, sp[2] = {0}, nc[3] = {0}, np[2] = {0};
    rp_status s = read_tensor(f, "prompt_embeds", 3, sc, &out->context, err);
    if (s == RP_OK) s = read_tensor(f, "pooled_prompt_embeds", 2, sp, &out->pooled, err);
    if (s == RP_OK && (sc[0] < 1 || sc[1] < 1 || sc[2] != Dctx || sp[0] != sc[0] || sp[1] != Dpool))
        s = RP_FAIL(err, RP_ERR_SHAPE, "%s: prompt_embeds [%lld, %lld, %lld] and pooled_prompt_embeds [%lld, %lld] "
                    "must be (R, L, %d) and (R, %d) with R, L >= 1: the model's context and pooled widths", path,
                    (long long)sc[0], (long long)sc[1], (long long)sc[2], (long long)sp[0], (long long)sp[1], Dctx,
                    Dpool);
    const int has_nc = rp_st_find(f, "negative_prompt_embeds") != NULL;
    const int has_np = rp_st_find(f, "negative_pooled_prompt_embeds") != NULL;
    if (s == RP_OK && has_nc != has_np)
        s = RP_FAIL(err, RP_ERR_INVALID, "%s: negative_prompt_embeds and negative_pooled_prompt_embeds come as a pair "
                    "(the file has only %s)", path, has_nc ? "negative_prompt_embeds" : "negative_pooled_prompt_embeds");
    if (s == RP_OK && has_nc) {
        s = read_tensor(f, "negative_prompt_embeds", 3, nc, &out->neg_context, err);
        if (s == RP_OK) s = read_tensor(f, "negative_pooled_prompt_embeds", 2, np, &out->neg_pooled, err);
        if (s == RP_OK && (nc[0] != 1 || nc[1] != sc[1] || nc[2] != Dctx || np[0] != 1 || np[1] != Dpool))
            s = RP_FAIL(err, RP_ERR_SHAPE, "%s: negative_prompt_embeds [%lld, %lld, %lld] and "
                        "negative_pooled_prompt_embeds [%lld, %lld] must be (1, %lld, %d) and (1, %d): one negative "
                        "prompt, as long as the prompts", path, (long long)nc[0], (long long)nc[1], (long long)nc[2],
                        (long long)np[0], (long long)np[1], (long long)sc[1], Dctx, Dpool);
    }
    rp_st_close(f);
    if (s != RP_OK) {
        rp_prompt_embeds_free(out);
        return s;
    }
    if (sc[0] > (1 << 20) || sc[1] > (1 << 20)) { /* the rows were read, so this is far beyond memory anyway */
        rp_prompt_embeds_free(out);
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: prompt_embeds has too many rows or tokens", path);
    }
    out->R = (int)sc[0];
    out->L = (int)sc[1];
    out->Dctx = Dctx;
    out->Dpool = Dpool;
    return RP_OK;
}

rp_status rp_prompt_embeds_write(const char *path, int R, int L, int Dctx, int Dpool, const float *context,
                                 const float *pooled, const float *neg_context, const float *neg_pooled,
                                 rp_error *err) {
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    rp_status s = rp_st_writer_add(w, "prompt_embeds", RP_DT_F32, 3, (int64_t[]){R, L, Dctx}, context, err);
    if (s == RP_OK) s = rp_st_writer_add(w, "pooled_prompt_embeds", RP_DT_F32, 2, (int64_t[]){R, Dpool}, pooled, err);
    if (s == RP_OK && neg_context)
        s = rp_st_writer_add(w, "negative_prompt_embeds", RP_DT_F32, 3, (int64_t[]){1, L, Dctx}, neg_context, err);
    if (s == RP_OK && neg_context)
        s = rp_st_writer_add(w, "negative_pooled_prompt_embeds", RP_DT_F32, 2, (int64_t[]){1, Dpool}, neg_pooled,
                             err);
    if (s == RP_OK) s = rp_st_writer_meta(w, "repro.format", "prompt-embeds-v1", err);
    if (s == RP_OK) s = rp_st_writer_write(w, path, err);
    rp_st_writer_free(w);
    return s;
}
