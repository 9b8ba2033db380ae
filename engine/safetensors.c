/* safetensors.c — validating reader and atomic writer for safetensors files.
 *
 * Reader: the whole file is read into one buffer (checkpoints we load are at
 * most a few GB and are read once; fread keeps error handling simple and
 * portable). The JSON header is parsed with cJSON and every entry is checked
 * against the format's rules before any tensor is exposed, so later code can
 * trust data/nbytes/shape without re-checking. Messages always start with the
 * file path and, for per-tensor problems, "tensor '<name>'".
 *
 * Writer: tensors are laid out in name order (header keys and data offsets
 * both), so the same set of tensors always gives the same bytes whatever
 * order they were added in. The header is padded with spaces to a multiple of
 * 8 bytes (as tests/reference/st.py and the upstream implementation do), which
 * keeps the data region 8-byte aligned within the file. */
#include "safetensors.h"
#include "fsutil.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian host (the format is little-endian)"
#endif

/* Largest header we accept: real checkpoints have headers of a few hundred KB;
 * anything near this is a corrupt length field, not a header. */
#define ST_MAX_HEADER (100u * 1024u * 1024u)
/* Integers in the header arrive as JSON numbers (doubles in cJSON); beyond 2^53
 * they are no longer exact, so we refuse them rather than misread them. */
#define ST_MAX_EXACT 9007199254740992.0

static const struct { const char *name; size_t size; } DTYPES[] = {
    [RP_DT_F32] = {"F32", 4}, [RP_DT_F16] = {"F16", 2}, [RP_DT_BF16] = {"BF16", 2},
    [RP_DT_F64] = {"F64", 8}, [RP_DT_I64] = {"I64", 8}, [RP_DT_I32] = {"I32", 4},
    [RP_DT_U8] = {"U8", 1},
};
#define N_DTYPES ((int)(sizeof DTYPES / sizeof DTYPES[0]))

size_t rp_dtype_size(rp_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].size : 0;
}

const char *rp_dtype_name(rp_dtype dt) {
    return (int)dt >= 0 && (int)dt < N_DTYPES ? DTYPES[dt].name : "?";
}

/* Maps a header dtype string to rp_dtype; returns 0 if unknown. */
static int dtype_from_name(const char *s, rp_dtype *out) {
    for (int i = 0; i < N_DTYPES; i++)
        if (!strcmp(s, DTYPES[i].name)) { *out = (rp_dtype)i; return 1; }
    return 0;
}

/* Formats shape as "[a, b, c]" into buf (always NUL-terminated). */
const char *rp_st_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
    return buf;
}

/* ---- reader ------------------------------------------------------------- */

static void free_partial(rp_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->tensors[i].name);
    for (int i = 0; i < f->n_meta; i++) { free(f->meta_keys[i]); free(f->meta_values[i]); }
    free(f->tensors);
    free(f->meta_keys);
    free(f->meta_values);
    for (int i = 0; i < f->n_parts; i++) free_partial(f->parts[i]);
    free(f->parts);
    if (f->mapped) munmap(f->map, f->mapped);
    else free(f->map);
    free(f->path);
    free(f);
}

void rp_st_close(rp_st_file *f) { free_partial(f); }

static int cmp_tensor_name(const void *a, const void *b) {
    return strcmp(((const rp_st_tensor *)a)->name, ((const rp_st_tensor *)b)->name);
}

/* Reads a non-negative exact integer from a JSON number; 0 if it is not one. */
static int json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    if (!(d >= 0.0) || d > ST_MAX_EXACT || d != floor(d)) return 0;
    *out = (uint64_t)d;
    return 1;
}

/* A metadata entry, for sorting keys and values together. */
typedef struct kvpair {
    char *k, *v;
} kvpair;

static int cmp_kvpair(const void *a, const void *b) {
    return strcmp(((const kvpair *)a)->k, ((const kvpair *)b)->k);
}

/* Parses the "__metadata__" object into f->meta_* (sorted by key). */
static rp_status parse_meta(rp_st_file *f, const cJSON *m, rp_error *err) {
    if (!cJSON_IsObject(m))
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: __metadata__ is not a JSON object", f->path);
    int n = cJSON_GetArraySize(m);
    f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
    f->meta_values = calloc((size_t)n + 1, sizeof *f->meta_values);
    if (!f->meta_keys || !f->meta_values)
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory reading metadata", f->path);
    for (const cJSON *e = m->child; e; e = e->next) {
        if (!cJSON_IsString(e))
            return RP_FAIL(err, RP_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string",
                           f->path, e->string);
        int i = f->n_meta;
        f->meta_keys[i] = strdup(e->string);
        f->meta_values[i] = strdup(e->valuestring);
        f->n_meta++;
        if (!f->meta_keys[i] || !f->meta_values[i])
            return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory reading metadata", f->path);
    }
    /* qsort by key: a header may hold 10^5 keys (insertion sort took minutes) */
    kvpair *kv = malloc(((size_t)f->n_meta + 1) * sizeof *kv);
    if (!kv) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory reading metadata", f->path);
    for (int i = 0; i < f->n_meta; i++) kv[i] = (kvpair){f->meta_keys[i], f->meta_values[i]};
    qsort(kv, (size_t)f->n_meta, sizeof *kv, cmp_kvpair);
    for (int i = 0; i < f->n_meta; i++) f->meta_keys[i] = kv[i].k, f->meta_values[i] = kv[i].v;
    free(kv);
    for (int i = 1; i < f->n_meta; i++)
        if (!strcmp(f->meta_keys[i - 1], f->meta_keys[i]))
            return RP_FAIL(err, RP_ERR_FORMAT, "%s: __metadata__ key '%s' appears twice", f->path,
                           f->meta_keys[i]);
    return RP_OK;
}

/* Parses and checks one tensor entry e into t; data_size is the data region's size. */
static rp_status parse_tensor(const rp_st_file *f, const cJSON *e, const unsigned char *data,
                              size_t data_size, rp_st_tensor *t, rp_error *err) {
    const char *p = f->path, *nm = e->string;
    if (!cJSON_IsObject(e))
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': entry is not a JSON object", p, nm);
    const cJSON *jd = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *jo = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(jd))
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': missing or non-string dtype", p, nm);
    if (!dtype_from_name(jd->valuestring, &t->dtype))
        return RP_FAIL(err, RP_ERR_FORMAT,
                       "%s: tensor '%s': unknown dtype '%s' (known: F32 F16 BF16 F64 I64 I32 U8)", p,
                       nm, jd->valuestring);
    if (!cJSON_IsArray(js))
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': missing or non-array shape", p, nm);
    int nd = cJSON_GetArraySize(js);
    if (nd > RP_ST_MAX_DIMS)
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': %d dimensions (at most %d supported)", p,
                       nm, nd, RP_ST_MAX_DIMS);
    t->ndim = nd;
    size_t numel = 1;
    int overflow = 0, k = 0;
    for (const cJSON *d = js->child; d; d = d->next, k++) {
        uint64_t v;
        if (!json_uint(d, &v) || v > (uint64_t)INT64_MAX)
            return RP_FAIL(err, RP_ERR_FORMAT,
                           "%s: tensor '%s': shape entry %d is not a non-negative integer below 2^53",
                           p, nm, k);
        t->shape[k] = (int64_t)v;
        if (v != 0 && numel > SIZE_MAX / v) overflow = 1;
        else numel *= (size_t)v;
    }
    size_t esize = DTYPES[t->dtype].size;
    if (!overflow && numel > SIZE_MAX / esize) overflow = 1;
    char sb[200];
    if (overflow)
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': shape %s has too many elements", p, nm,
                       rp_st_shape_str(sb, sizeof sb, t->ndim, t->shape));
    t->numel = numel;
    uint64_t b, en;
    if (!cJSON_IsArray(jo) || cJSON_GetArraySize(jo) != 2 || !json_uint(jo->child, &b) ||
        !json_uint(jo->child->next, &en))
        return RP_FAIL(err, RP_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets must be [begin, end] non-negative integers", p, nm);
    if (b > en)
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] have begin > end",
                       p, nm, (unsigned long long)b, (unsigned long long)en);
    if (en > data_size)
        return RP_FAIL(err, RP_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%llu, %llu] exceed the data region (%zu bytes)", p,
                       nm, (unsigned long long)b, (unsigned long long)en, data_size);
    if (en - b != numel * esize)
        return RP_FAIL(err, RP_ERR_FORMAT,
                       "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but shape %s of %s "
                       "needs %zu",
                       p, nm, (unsigned long long)b, (unsigned long long)en,
                       (unsigned long long)(en - b), rp_st_shape_str(sb, sizeof sb, t->ndim, t->shape),
                       DTYPES[t->dtype].name, numel * esize);
    t->data = data + b;
    t->nbytes = (size_t)(en - b);
    return RP_OK;
}

/* Sort helper for the overlap check: tensors by data start. */
static int cmp_tensor_ptr(const void *a, const void *b) {
    const rp_st_tensor *x = *(const rp_st_tensor *const *)a, *y = *(const rp_st_tensor *const *)b;
    const unsigned char *px = x->data, *py = y->data;
    if (px != py) return px < py ? -1 : 1;
    return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* Refuses two non-empty tensors sharing any byte. */
static rp_status check_overlap(const rp_st_file *f, const unsigned char *data, rp_error *err) {
    if (f->n < 2) return RP_OK;
    const rp_st_tensor **order = malloc((size_t)f->n * sizeof *order);
    if (!order) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", f->path);
    for (int i = 0; i < f->n; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->n, sizeof *order, cmp_tensor_ptr);
    const rp_st_tensor *prev = NULL; /* the non-empty tensor reaching furthest so far */
    rp_status s = RP_OK;
    for (int i = 0; i < f->n; i++) {
        const rp_st_tensor *t = order[i];
        if (t->nbytes == 0) continue; /* empty tensors own no bytes */
        const unsigned char *tb = t->data;
        if (prev && tb < (const unsigned char *)prev->data + prev->nbytes) {
            size_t pb = (size_t)((const unsigned char *)prev->data - data);
            size_t b = (size_t)(tb - data);
            s = RP_FAIL(err, RP_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%zu, %zu] overlap tensor '%s' [%zu, %zu]", f->path,
                        t->name, b, b + t->nbytes, prev->name, pb, pb + prev->nbytes);
            break;
        }
        if (!prev || tb + t->nbytes > (const unsigned char *)prev->data + prev->nbytes) prev = t;
    }
    free(order);
    return s;
}

/* Validates the already-read buffer f->map into f's tensor table. */
static rp_status parse_file(rp_st_file *f, rp_error *err) {
    const char *p = f->path;
    const unsigned char *raw = f->map;
    if (f->size < 8)
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: file is %zu bytes, too short for the 8-byte header length",
                       p, f->size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | raw[i];
    if (hlen > f->size - 8)
        return RP_FAIL(err, RP_ERR_FORMAT,
                       "%s: header length %llu exceeds the file (%zu bytes after the length field); "
                       "truncated or not a safetensors file",
                       p, (unsigned long long)hlen, f->size - 8);
    if (hlen >= ST_MAX_HEADER)
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: header length %llu is implausibly large (limit %u)", p,
                       (unsigned long long)hlen, ST_MAX_HEADER);
    const char *hdr = (const char *)raw + 8;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
    if (!root) {
        size_t at = end && end >= hdr ? (size_t)(end - hdr) : 0;
        return RP_FAIL(err, RP_ERR_FORMAT, "%s: header is not valid JSON (error near byte %zu of %llu)", p,
                       at, (unsigned long long)hlen);
    }
    rp_status s = RP_OK;
    /* Only whitespace (the format's padding) may follow the JSON value. */
    for (const char *q = end; q < hdr + hlen; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r') {
            s = RP_FAIL(err, RP_ERR_FORMAT, "%s: header has trailing bytes after the JSON object", p);
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        s = RP_FAIL(err, RP_ERR_FORMAT, "%s: header is not a JSON object", p);
        goto done;
    }
    const unsigned char *data = raw + 8 + hlen;
    size_t data_size = f->size - 8 - (size_t)hlen;
    int cap = cJSON_GetArraySize(root);
    f->tensors = calloc((size_t)cap + 1, sizeof *f->tensors);
    if (!f->tensors) { s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", p); goto done; }
    int seen_meta = 0;
    for (const cJSON *e = root->child; e; e = e->next) {
        assert(e->string);
        if (!strcmp(e->string, "__metadata__")) {
            if (seen_meta++) { s = RP_FAIL(err, RP_ERR_FORMAT, "%s: __metadata__ appears twice", p); goto done; }
            if ((s = parse_meta(f, e, err)) != RP_OK) goto done;
            continue;
        }
        rp_st_tensor *t = &f->tensors[f->n];
        memset(t, 0, sizeof *t);
        t->name = strdup(e->string);
        if (!t->name) { s = RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", p); goto done; }
        f->n++;
        if ((s = parse_tensor(f, e, data, data_size, t, err)) != RP_OK) goto done;
    }
    qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, cmp_tensor_name);
    for (int i = 1; i < f->n; i++)
        if (!strcmp(f->tensors[i - 1].name, f->tensors[i].name)) {
            s = RP_FAIL(err, RP_ERR_FORMAT, "%s: tensor '%s': appears twice in the header", p,
                        f->tensors[i].name);
            goto done;
        }
    s = check_overlap(f, data, err);
done:
    cJSON_Delete(root);
    return s;
}

/* Maps the whole of regular file path into f (copy-on-write: a reader that writes into a
 * tensor changes its own pages only, as with a buffer it read). Mapping reads only the pages
 * a reader touches and copies none: a trace the classifier compares a few layers of, a
 * checkpoint converted to fp32 without a second copy of it in memory. 0 when the file cannot
 * be mapped (an empty or special file, no address space): the caller reads it instead. The
 * store and the weight cache replace files by rename, never in place, so a mapped file keeps
 * its pages while it is open. */
static int map_file(const char *path, rp_st_file *f) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= SIZE_MAX)
        m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    f->map = m;
    f->size = f->mapped = (size_t)st.st_size;
    return 1;
}

rp_status rp_st_open(const char *path, rp_st_file **out, rp_error *err) {
    assert(path && out);
    rp_st_file *f = calloc(1, sizeof *f);
    if (!f) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    f->path = strdup(path);
    if (!f->path) { free(f); return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path); }
    rp_status s = RP_OK;
    if (!map_file(path, f)) { /* read instead; its errors name what is wrong with the path */
        char *buf = NULL;      /* no size bound: a checkpoint is what it is */
        s = rp_read_file(path, SIZE_MAX, "a safetensors file", &buf, &f->size, err);
        f->map = buf;
    }
    if (s == RP_OK) s = parse_file(f, err);
    if (s != RP_OK) { free_partial(f); return s; }
    *out = f;
    return RP_OK;
}

const rp_st_tensor *rp_st_find(const rp_st_file *f, const char *name) {
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(name, f->tensors[mid].name);
        if (c == 0) return &f->tensors[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

const char *rp_st_meta(const rp_st_file *f, const char *key) {
    int lo = 0, hi = f->n_meta - 1; /* keys are sorted (parse_meta): a trace looks one up per record */
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(key, f->meta_keys[mid]);
        if (c == 0) return f->meta_values[mid];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

/* IEEE binary16 -> float, exact (every half is a float). Local so the reader
 * does not depend on ops.c. */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13); /* inf / nan (payload kept) */
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13); /* rebias 15 -> 127 */
    } else if (m == 0) {
        bits = sign; /* +-0 */
    } else {
        /* subnormal: value = m * 2^-24; normalise the mantissa */
        int sh = 0;
        while (!(m & 0x400u)) { m <<= 1; sh++; }
        bits = sign | ((uint32_t)(113 - sh) << 23) | ((m & 0x3ffu) << 13);
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

rp_status rp_st_read_f32(const rp_st_file *f, const char *name, int ndim, const int64_t *shape,
                         float *dst, rp_error *err) {
    const rp_st_tensor *t = rp_st_find(f, name);
    if (!t) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: missing tensor '%s'", f->path, name);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char a[200], b[200];
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has shape %s, model needs %s", f->path, name,
                       rp_st_shape_str(a, sizeof a, t->ndim, t->shape), rp_st_shape_str(b, sizeof b, ndim, shape));
    }
    const unsigned char *src = t->data;
    switch (t->dtype) {
    case RP_DT_F32:
        if (t->nbytes) memcpy(dst, src, t->nbytes);
        break;
    case RP_DT_F16:
    case RP_DT_BF16:
        for (size_t i = 0; i < t->numel; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2); /* data may be unaligned */
            if (t->dtype == RP_DT_F16) {
                dst[i] = half_to_float(h);
            } else {
                uint32_t bits = (uint32_t)h << 16;
                memcpy(&dst[i], &bits, 4);
            }
        }
        break;
    case RP_DT_F64:
        for (size_t i = 0; i < t->numel; i++) {
            double d;
            memcpy(&d, src + 8 * i, 8);
            dst[i] = (float)d;
        }
        break;
    default:
        return RP_FAIL(err, RP_ERR_SHAPE, "%s: tensor '%s' has dtype %s, model needs a float tensor",
                       f->path, name, rp_dtype_name(t->dtype));
    }
    return RP_OK;
}

/* ---- writer ------------------------------------------------------------- */

typedef struct wtensor {
    char *name;
    rp_dtype dtype;
    int ndim;
    int64_t shape[RP_ST_MAX_DIMS];
    size_t nbytes;
    const void *data;      /* or NULL with fill set */
    rp_st_fill_fn fill;
    void *user;
} wtensor;

struct rp_st_writer {
    wtensor *t;
    int n, cap;
    char **mk, **mv;
    int n_meta, cap_meta;
};

rp_st_writer *rp_st_writer_new(void) { return calloc(1, sizeof(rp_st_writer)); }

void rp_st_writer_free(rp_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->t[i].name);
    for (int i = 0; i < w->n_meta; i++) { free(w->mk[i]); free(w->mv[i]); }
    free(w->t);
    free(w->mk);
    free(w->mv);
    free(w);
}

static rp_status add_common(rp_st_writer *w, const char *name, rp_dtype dtype, int ndim,
                            const int64_t *shape, const void *data, rp_st_fill_fn fill, void *user,
                            rp_error *err) {
    assert(w && name);
    if (!name[0] || !strcmp(name, "__metadata__"))
        return RP_FAIL(err, RP_ERR_INVALID, "safetensors writer: invalid tensor name '%s'", name);
    if ((int)dtype < 0 || (int)dtype >= N_DTYPES)
        return RP_FAIL(err, RP_ERR_INVALID, "safetensors writer: tensor '%s': bad dtype %d", name, (int)dtype);
    if (ndim < 0 || ndim > RP_ST_MAX_DIMS)
        return RP_FAIL(err, RP_ERR_INVALID, "safetensors writer: tensor '%s': %d dimensions (max %d)", name,
                       ndim, RP_ST_MAX_DIMS);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] && numel > SIZE_MAX / 8 / (size_t)shape[i]))
            return RP_FAIL(err, RP_ERR_INVALID, "safetensors writer: tensor '%s': bad shape entry %lld",
                           name, (long long)shape[i]);
        numel *= (size_t)shape[i];
    }
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name))
            return RP_FAIL(err, RP_ERR_INVALID, "safetensors writer: duplicate tensor name '%s'", name);
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 64;
        wtensor *nt = realloc(w->t, (size_t)nc * sizeof *nt);
        if (!nt) return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory");
        w->t = nt;
        w->cap = nc;
    }
    wtensor *t = &w->t[w->n];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name) return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory");
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->nbytes = numel * DTYPES[dtype].size;
    t->data = data;
    t->fill = fill;
    t->user = user;
    assert(t->nbytes == 0 || data || fill);
    w->n++;
    return RP_OK;
}

rp_status rp_st_writer_add(rp_st_writer *w, const char *name, rp_dtype dtype, int ndim,
                           const int64_t *shape, const void *data, rp_error *err) {
    return add_common(w, name, dtype, ndim, shape, data, NULL, NULL, err);
}

rp_status rp_st_writer_add_fill(rp_st_writer *w, const char *name, rp_dtype dtype, int ndim,
                                const int64_t *shape, rp_st_fill_fn fill, void *user, rp_error *err) {
    assert(fill);
    return add_common(w, name, dtype, ndim, shape, NULL, fill, user, err);
}

rp_status rp_st_writer_meta(rp_st_writer *w, const char *key, const char *value, rp_error *err) {
    assert(w && key && value);
    for (int i = 0; i < w->n_meta; i++)
        if (!strcmp(w->mk[i], key)) {
            char *v = strdup(value);
            if (!v) return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory");
            free(w->mv[i]);
            w->mv[i] = v;
            return RP_OK;
        }
    if (w->n_meta == w->cap_meta) {
        int nc = w->cap_meta ? 2 * w->cap_meta : 16;
        char **k = realloc(w->mk, (size_t)nc * sizeof *k);
        if (!k) return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory");
        w->mk = k;
        char **v = realloc(w->mv, (size_t)nc * sizeof *v);
        if (!v) return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory");
        w->mv = v;
        w->cap_meta = nc;
    }
    char *k = strdup(key), *v = strdup(value);
    if (!k || !v) { free(k); free(v); return RP_FAIL(err, RP_ERR_NOMEM, "safetensors writer: out of memory"); }
    w->mk[w->n_meta] = k;
    w->mv[w->n_meta] = v;
    w->n_meta++;
    return RP_OK;
}

static int cmp_wtensor(const void *a, const void *b) {
    return strcmp(((const wtensor *)a)->name, ((const wtensor *)b)->name);
}

/* Builds the header JSON (unpadded) for w's tensors, already sorted by name.
 * Keys are inserted in a fixed order, so the text is deterministic. */
static char *build_header(const rp_st_writer *w) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    int ok = 1;
    if (w->n_meta) {
        /* sorted copy of the metadata so insertion order does not change the bytes */
        kvpair *kv = malloc((size_t)w->n_meta * sizeof *kv);
        cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
        ok = kv && m;
        for (int i = 0; ok && i < w->n_meta; i++) kv[i] = (kvpair){w->mk[i], w->mv[i]};
        if (ok) qsort(kv, (size_t)w->n_meta, sizeof *kv, cmp_kvpair);
        for (int i = 0; ok && i < w->n_meta; i++) ok = cJSON_AddStringToObject(m, kv[i].k, kv[i].v) != NULL;
        free(kv);
    }
    size_t off = 0;
    for (int i = 0; ok && i < w->n; i++) {
        const wtensor *t = &w->t[i];
        cJSON *e = cJSON_AddObjectToObject(root, t->name);
        cJSON *shape = e ? cJSON_AddArrayToObject(e, "shape") : NULL;
        cJSON *offs = NULL;
        ok = e && cJSON_AddStringToObject(e, "dtype", DTYPES[t->dtype].name) && shape;
        for (int d = 0; ok && d < t->ndim; d++) {
            cJSON *v = cJSON_CreateNumber((double)t->shape[d]);
            ok = v && cJSON_AddItemToArray(shape, v);
        }
        if (ok) ok = (offs = cJSON_AddArrayToObject(e, "data_offsets")) != NULL;
        if (ok) {
            cJSON *b = cJSON_CreateNumber((double)off), *en = cJSON_CreateNumber((double)(off + t->nbytes));
            ok = b && en && cJSON_AddItemToArray(offs, b) && cJSON_AddItemToArray(offs, en);
        }
        off += t->nbytes;
    }
    char *s = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return s;
}

rp_status rp_st_writer_write(rp_st_writer *w, const char *path, rp_error *err) {
    assert(w && path);
    RP_TRY(rp_atomic_target_ok(path, err));
    qsort(w->t, (size_t)w->n, sizeof *w->t, cmp_wtensor);
    char *hdr = build_header(w);
    if (!hdr) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory building the header", path);
    size_t hl = strlen(hdr), pad = (8 - hl % 8) % 8;
    size_t maxfill = 0;
    for (int i = 0; i < w->n; i++)
        if (w->t[i].fill && w->t[i].nbytes > maxfill) maxfill = w->t[i].nbytes;
    void *scratch = maxfill ? malloc(maxfill) : NULL;
    if (maxfill && !scratch) {
        free(hdr);
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: cannot allocate %zu bytes of scratch", path, maxfill);
    }

    size_t tl = strlen(path) + 32;
    char *tmp = malloc(tl);
    if (!tmp) { free(hdr); free(scratch); return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path); }
    snprintf(tmp, tl, "%s.tmp.%ld", path, (long)getpid());
    rp_status s = RP_OK;
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        s = RP_FAIL(err, RP_ERR_IO, "%s: cannot create %s: %s", path, tmp, strerror(errno));
        goto out;
    }
    unsigned char len8[8];
    uint64_t total = hl + pad;
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(total >> (8 * i));
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hl, fp) == hl;
    for (size_t i = 0; ok && i < pad; i++) ok = fputc(' ', fp) != EOF;
    for (int i = 0; ok && i < w->n; i++) {
        const wtensor *t = &w->t[i];
        if (!t->nbytes) continue;
        const void *src = t->data;
        if (t->fill) { t->fill(t->user, scratch, t->nbytes); src = scratch; }
        ok = fwrite(src, 1, t->nbytes, fp) == t->nbytes;
    }
    /* fsync before rename: a crash must never leave a complete-looking name
     * pointing at incomplete data. */
    if (ok) ok = fflush(fp) == 0 && fsync(fileno(fp)) == 0;
    int saved = errno;
    if (fclose(fp) != 0 && ok) { ok = 0; saved = errno; }
    if (!ok) {
        s = RP_FAIL(err, RP_ERR_IO, "%s: writing %s failed: %s", path, tmp, strerror(saved));
        unlink(tmp);
        goto out;
    }
    if (rename(tmp, path) != 0) {
        s = RP_FAIL(err, RP_ERR_IO, "%s: cannot rename %s into place: %s", path, tmp, strerror(errno));
        unlink(tmp);
    }
out:
    free(tmp);
    free(hdr);
    free(scratch);
    return s;
}

float *rp_st_f32_view(const rp_st_file *f, const rp_st_tensor *t) {
    (void)f; /* t points into f (or into one of its parts), which holds the bytes */
    if (!t || t->dtype != RP_DT_F32 || ((uintptr_t)t->data & (sizeof(float) - 1))) return NULL;
    return (float *)(uintptr_t)t->data;
}

rp_status rp_st_f32_borrow(const rp_st_file *f, const rp_st_tensor *t, float **out, float **owned, rp_error *err) {
    assert(f && t && out && owned);
    *owned = NULL;
    if ((*out = rp_st_f32_view(f, t))) return RP_OK;
    if (!(*owned = malloc(sizeof(float) * (t->numel ? t->numel : 1))))
        return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory reading tensor '%s'", f->path, t->name);
    rp_status st = rp_st_read_f32(f, t->name, t->ndim, t->shape, *owned, err);
    if (st != RP_OK) {
        free(*owned);
        *owned = NULL;
        return st;
    }
    *out = *owned;
    return RP_OK;
}

rp_status rp_st_read_f32_alloc(const rp_st_file *f, const char *name, float **out, const rp_st_tensor **t,
                               rp_error *err) {
    *out = NULL;
    *t = rp_st_find(f, name);
    if (!*t) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s has no tensor '%s'", f->path, name);
    *out = malloc(sizeof(float) * ((*t)->numel ? (*t)->numel : 1));
    if (!*out) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory reading %s", f->path);
    rp_status st = rp_st_read_f32(f, name, (*t)->ndim, (*t)->shape, *out, err);
    if (st != RP_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

int rp_st_same_shape(const rp_st_tensor *a, const rp_st_tensor *b) {
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}
