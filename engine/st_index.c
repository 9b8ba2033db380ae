/* st_index.c — sharded safetensors checkpoints (see st_compose.h).
 *
 * diffusers and transformers save large models as shards plus an index,
 * "<name>.safetensors.index.json": {"metadata": {...}, "weight_map": {"tensor":
 * "<name>-00001-of-00003.safetensors", ...}}. The weight_map is the authority: a
 * tensor comes from the shard it names, and every listed tensor must be there. */
#include "st_compose.h"
#include "fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* An index lists one entry per tensor (tens of KB for FLUX); anything near this is not one. */
#define IDX_MAX_BYTES (64u * 1024u * 1024u)
/* Shards of one checkpoint: a few to a few dozen. Bounds the shard bookkeeping below
 * (a linear search per weight_map entry). */
#define IDX_MAX_SHARDS 256

/* A shard file name must be a plain name in the index's directory. */
static int plain_name(const char *s) {
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

typedef struct shard {
    const char *name;         /* as in the index (owned by the cJSON tree) */
    const char *first_tensor; /* the first tensor mapped to it, for messages */
    rp_st_file *f;
} shard;

static int cmp_shard(const void *a, const void *b) {
    return strcmp(((const shard *)a)->name, ((const shard *)b)->name);
}

rp_status rp_st_open_index(const char *index_path, rp_st_file **out, rp_error *err) {
    char *text = NULL;
    size_t n_text;
    RP_TRY(rp_read_file(index_path, IDX_MAX_BYTES, "a checkpoint index", &text, &n_text, err));
    cJSON *root = cJSON_Parse(text);
    free(text);
    shard *sh = NULL;
    int n_sh = 0;
    rp_st_file *f = NULL;
    rp_status s = RP_OK;
    const cJSON *wm = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!root) { s = RP_FAIL(err, RP_ERR_FORMAT, "%s: not valid JSON", index_path); goto done; }
    if (!cJSON_IsObject(wm)) {
        s = RP_FAIL(err, RP_ERR_FORMAT, "%s: no \"weight_map\" object (a sharded checkpoint's index maps each "
                    "tensor to its shard file)", index_path);
        goto done;
    }
    const int n = cJSON_GetArraySize(wm);
    if (n < 1) { s = RP_FAIL(err, RP_ERR_FORMAT, "%s: weight_map is empty", index_path); goto done; }

    /* the distinct shards, each with the first tensor that names it */
    sh = calloc((size_t)(n < IDX_MAX_SHARDS ? n : IDX_MAX_SHARDS), sizeof *sh);
    if (!sh) { s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", index_path); goto done; }
    for (const cJSON *e = wm->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !plain_name(e->valuestring)) {
            s = RP_FAIL(err, RP_ERR_FORMAT,
                        "%s: weight_map entry for tensor '%s' must be a shard file name in the index's directory "
                        "(a string without '/')", index_path, e->string);
            goto done;
        }
        int k = 0;
        while (k < n_sh && strcmp(sh[k].name, e->valuestring)) k++;
        if (k < n_sh) continue;
        if (n_sh == IDX_MAX_SHARDS) {
            s = RP_FAIL(err, RP_ERR_FORMAT, "%s: more than %d shard files", index_path, IDX_MAX_SHARDS);
            goto done;
        }
        sh[n_sh].name = e->valuestring;
        sh[n_sh].first_tensor = e->string;
        n_sh++;
    }
    qsort(sh, (size_t)n_sh, sizeof *sh, cmp_shard); /* metadata precedence by shard name */

    /* each shard opened once, relative to the index's directory */
    const char *slash = strrchr(index_path, '/');
    const int dir_len = slash ? (int)(slash - index_path) + 1 : 0;
    for (int k = 0; k < n_sh; k++) {
        char p[4096];
        if (snprintf(p, sizeof p, "%.*s%s", dir_len, index_path, sh[k].name) >= (int)sizeof p) {
            s = RP_FAIL(err, RP_ERR_INVALID, "%s: shard path too long: %s", index_path, sh[k].name);
            goto done;
        }
        rp_error e;
        rp_error_clear(&e);
        if ((s = rp_st_open(p, &sh[k].f, &e)) != RP_OK) {
            s = RP_FAIL(err, s, "%s: shard '%s' (holding tensor '%s', and maybe more) cannot be read: %s",
                        index_path, sh[k].name, sh[k].first_tensor, e.msg);
            goto done;
        }
    }

    if ((s = rp_st_compose_new(index_path, n, 0, &f, err)) != RP_OK) goto done;
    for (const cJSON *e = wm->child; e; e = e->next) {
        shard key = {.name = e->valuestring};
        const shard *k = bsearch(&key, sh, (size_t)n_sh, sizeof *sh, cmp_shard);
        const rp_st_tensor *t = rp_st_find(k->f, e->string);
        if (!t) {
            s = RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: tensor '%s' is mapped to shard '%s', which has no such tensor",
                        index_path, e->string, k->name);
            goto done;
        }
        if ((s = rp_st_compose_add(f, t->name, t->dtype, t->ndim, t->shape, t->data, err)) != RP_OK) goto done;
    }
    for (int k = 0; k < n_sh; k++) {
        if ((s = rp_st_compose_meta(f, sh[k].f, err)) != RP_OK) goto done;
        rp_st_file *part = sh[k].f;
        sh[k].f = NULL; /* f owns it now, even if compose_part fails (it closes it then) */
        if ((s = rp_st_compose_part(f, part, err)) != RP_OK) goto done;
    }
    s = rp_st_compose_finish(f, err);
done:
    if (sh)
        for (int k = 0; k < n_sh; k++) rp_st_close(sh[k].f);
    free(sh);
    cJSON_Delete(root);
    if (s != RP_OK) {
        rp_st_close(f);
        return s;
    }
    *out = f;
    return RP_OK;
}
