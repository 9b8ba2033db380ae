/* sharpen.c — the sharpened variant of a model's weights (see sharpen.h). */
#include "sharpen.h"

#include <assert.h>
#include <string.h>

/* The attention projections whose weights set the logits' scale (q, k) and the
 * values (v): DiT's fused qkv, diffusers' to_q/to_k/to_v and their context twins. */
static const char *const PROJ[] = {"attn.qkv.weight",        "attn.to_q.weight",       "attn.to_k.weight",
                                   "attn.to_v.weight",       "attn.add_q_proj.weight", "attn.add_k_proj.weight",
                                   "attn.add_v_proj.weight"};

static int is_projection(const char *name) {
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof PROJ / sizeof PROJ[0]; i++) {
        const size_t m = strlen(PROJ[i]);
        if (n >= m && !strcmp(name + n - m, PROJ[i]) && (n == m || name[n - m - 1] == '.')) return 1;
    }
    return 0;
}

rp_status rp_weights_sharpen(rp_st_file *f, int factor, rp_error *err) {
    assert(f);
    if (factor == 0 || factor == 1) return RP_OK;
    if (factor < 0 || factor > RP_SHARPEN_MAX)
        return RP_FAIL(err, RP_ERR_INVALID, "sharpen=%d: must be 0..%d (0, 1: off)", factor, RP_SHARPEN_MAX);
    int n = 0;
    for (int i = 0; i < f->n; i++) {
        const rp_st_tensor *t = &f->tensors[i];
        if (!is_projection(t->name)) continue;
        if (t->dtype != RP_DT_F32)
            return RP_FAIL(err, RP_ERR_UNSUPPORTED, "%s: sharpen=%d scales F32 weights; '%s' is %s", f->path, factor,
                           t->name, rp_dtype_name(t->dtype));
        /* the loaded file is this process's copy (rp_st_open reads it into memory) */
        unsigned char *p = (unsigned char *)(uintptr_t)t->data;
        for (size_t k = 0; k < t->numel; k++) {
            float v;
            memcpy(&v, p + 4 * k, 4); /* the data may be unaligned (a foreign writer) */
            v *= (float)factor;       /* exact: a small integer scale of a float */
            memcpy(p + 4 * k, &v, 4);
        }
        n++;
    }
    if (!n)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: sharpen=%d: no attention projection weights (*.attn.qkv.weight, "
                       "*.attn.to_q.weight, ...) to scale", f->path, factor);
    return RP_OK;
}
