/* st_compose.c — building rp_st_files from other files' tensors, and rp_weights_open.
 * See st_compose.h. */
#include "st_compose.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

rp_status rp_st_compose_new(const char *path, int cap, size_t own_bytes, rp_st_file **out, rp_error *err) {
    assert(path && cap >= 0 && out);
    rp_st_file *f = calloc(1, sizeof *f);
    if (f) f->path = strdup(path);
    if (f && f->path) f->tensors = calloc((size_t)cap + 1, sizeof *f->tensors);
    if (f && f->tensors && own_bytes) f->map = malloc(own_bytes);
    if (!f || !f->path || !f->tensors || (own_bytes && !f->map)) {
        rp_st_close(f);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory for %d tensor records", path, cap);
    }
    f->size = own_bytes;
    *out = f;
    return RP_OK;
}

rp_status rp_st_compose_add(rp_st_file *f, const char *name, rp_dtype dtype, int ndim, const int64_t *shape,
                            const void *data, rp_error *err) {
    assert(ndim >= 0 && ndim <= RP_ST_MAX_DIMS);
    rp_st_tensor *t = &f->tensors[f->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", f->path);
    f->n++; /* the caller sized tensors for every add (rp_st_compose_new's cap) */
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int d = 0; d < ndim; d++) {
        t->shape[d] = shape[d];
        t->numel *= (size_t)shape[d];
    }
    t->data = data;
    t->nbytes = t->numel * rp_dtype_size(dtype);
    return RP_OK;
}

rp_status rp_st_compose_part(rp_st_file *f, rp_st_file *part, rp_error *err) {
    rp_st_file **p = realloc(f->parts, sizeof *p * (size_t)(f->n_parts + 1));
    if (!p) {
        rp_st_close(part);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", f->path);
    }
    f->parts = p;
    f->parts[f->n_parts++] = part;
    return RP_OK;
}

rp_status rp_st_compose_meta(rp_st_file *f, const rp_st_file *src, rp_error *err) {
    for (int i = 0; i < src->n_meta; i++) {
        int have = 0;
        for (int k = 0; k < f->n_meta && !have; k++) have = !strcmp(f->meta_keys[k], src->meta_keys[i]);
        if (have) continue;
        char **nk = realloc(f->meta_keys, sizeof *nk * (size_t)(f->n_meta + 1));
        if (nk) f->meta_keys = nk;
        char **nv = nk ? realloc(f->meta_values, sizeof *nv * (size_t)(f->n_meta + 1)) : NULL;
        if (nv) f->meta_values = nv;
        char *k = nv ? strdup(src->meta_keys[i]) : NULL, *v = k ? strdup(src->meta_values[i]) : NULL;
        if (!v) {
            free(k);
            return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory copying metadata", f->path);
        }
        f->meta_keys[f->n_meta] = k;
        f->meta_values[f->n_meta] = v;
        f->n_meta++;
    }
    return RP_OK;
}

static int cmp_tensor(const void *a, const void *b) {
    return strcmp(((const rp_st_tensor *)a)->name, ((const rp_st_tensor *)b)->name);
}

rp_status rp_st_compose_finish(rp_st_file *f, rp_error *err) {
    qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, cmp_tensor);
    for (int i = 1; i < f->n; i++)
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name))
            return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s' appears twice", f->path, f->tensors[i].name);
    /* metadata by key, as rp_st_open leaves it (insertion sort: a handful of keys) */
    for (int i = 1; i < f->n_meta; i++)
        for (int k = i; k > 0 && strcmp(f->meta_keys[k - 1], f->meta_keys[k]) > 0; k--) {
            char *tk = f->meta_keys[k], *tv = f->meta_values[k];
            f->meta_keys[k] = f->meta_keys[k - 1];
            f->meta_values[k] = f->meta_values[k - 1];
            f->meta_keys[k - 1] = tk;
            f->meta_values[k - 1] = tv;
        }
    return RP_OK;
}

rp_status rp_weights_open(const char *path, rp_st_file **out, rp_error *err) {
    assert(path && out);
    const size_t n = strlen(path);
    rp_st_file *f = NULL;
    if (n > 5 && !strcmp(path + n - 5, ".json")) RP_TRY(rp_st_open_index(path, &f, err));
    else RP_TRY(rp_st_open(path, &f, err));
    RP_TRY(rp_st_remap(&f, err));
    *out = f;
    return RP_OK;
}

rp_status rp_weights_open_for(const char *path, const char *model, rp_st_file **out, rp_error *err) {
    RP_TRY(rp_weights_open(path, out, err));
    const char *mm = rp_st_meta(*out, "repro.model");
    if (mm && strcmp(mm, model)) {
        RP_FAIL(err, RP_ERR_INVALID, "%s: weights are for model '%s', not '%s'", path, mm, model);
        rp_st_close(*out); /* after the message: mm is the file's */
        *out = NULL;
        return RP_ERR_INVALID;
    }
    return RP_OK;
}
