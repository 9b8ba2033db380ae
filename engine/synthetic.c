#include "synthetic.h"

#include <stdlib.h>
#include <string.h>

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const rp_st_tensor *)a)->name, ((const rp_st_tensor *)b)->name);
}

rp_status rp_st_synthetic(const rp_param_list *l, uint64_t weight_seed, const char *label,
                          rp_st_file **out, rp_error *err) {
    size_t total = rp_params_total(l);
    rp_st_file *f = calloc(1, sizeof *f);
    float *block = malloc((total ? total : 1) * sizeof(float));
    rp_st_tensor *t = calloc((size_t)(l->n ? l->n : 1), sizeof *t);
    char *path = strdup(label);
    if (!f || !block || !t || !path) {
        free(f); free(block); free(t); free(path);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %zu synthetic parameters", label, total);
    }
    f->path = path;
    f->map = block;
    f->size = total * sizeof(float);
    f->tensors = t;
    size_t off = 0;
    for (int i = 0; i < l->n; i++) {
        const rp_param_spec *s = &l->specs[i];
        size_t numel = rp_param_numel(s);
        rp_param_init_values(s, weight_seed, block + off);
        t[i].name = strdup(s->name);
        if (!t[i].name) { rp_st_close(f); return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", label); }
        f->n = i + 1;
        t[i].dtype = RP_DT_F32;
        t[i].ndim = s->ndim;
        for (int d = 0; d < s->ndim; d++) t[i].shape[d] = s->shape[d];
        t[i].numel = numel;
        t[i].data = block + off;
        t[i].nbytes = numel * sizeof(float);
        off += numel;
    }
    qsort(t, (size_t)l->n, sizeof *t, cmp_name);
    *out = f;
    return RP_OK;
}
