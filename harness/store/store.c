/* store.c — the result store: artifact names, atomic files, the outputs' comparison
 * (see store.h). */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/fsutil.h"
#include "engine/models/family_ops.h"
#include "engine/safetensors.h"
#include "harness/metrics/metrics.h"

enum { PATHLEN = 4096 };

/* ---- names ------------------------------------------------------------------------------- */

static const char *const ARTIFACT[RP_ART_COUNT] = {
    [RP_ART_CASE] = "case.json",          [RP_ART_RESULT] = "result.json",
    [RP_ART_DONE] = "done.json",          [RP_ART_ENV] = "env.json",
    [RP_ART_LATENTS] = "latents.safetensors", [RP_ART_TRACE] = "trace.safetensors",
    [RP_ART_TEACHER] = "teacher.safetensors", [RP_ART_REPLICAS] = "replicas.json",
    [RP_ART_METRICS] = "metrics.json",    [RP_ART_CLASSIFICATION] = "classification.json",
    [RP_ART_AUX] = "aux.json",            [RP_ART_GOLDEN] = "golden.json",
    [RP_ART_SUMMARY] = "summary.json",
};

static const char *const SUB[RP_SUB_COUNT] = {
    [RP_SUB_TEACHER] = "teacher",
    [RP_SUB_SHADOW] = "shadow",
    [RP_SUB_SHADOW_TEACHER] = "shadow/teacher",
    [RP_SUB_INVARIANT_TEACHER] = "invariant/teacher",
    [RP_SUB_INVARIANT_OWN_TEACHER] = "invariant/teacher-own",
    [RP_SUB_FRESH] = "fresh",
    [RP_SUB_FRESH_2] = "fresh-2",
    [RP_SUB_SHADOW_LEAK] = "shadow/leak",
    [RP_SUB_FRESH_FP32] = "fresh-fp32",
    [RP_SUB_FRESH_FP32_2] = "fresh-fp32-2",
    [RP_SUB_SELF] = "self",
    [RP_SUB_FRESH_SELF] = "fresh-self",
    [RP_SUB_FRESH_SELF_PLAIN] = "fresh-self-plain",
    [RP_SUB_EMULATION] = "emulation",
    [RP_SUB_DECODE_OWN] = "decode-own",
};

const char *rp_artifact_name(rp_artifact a) {
    assert(a >= 0 && a < RP_ART_COUNT);
    return ARTIFACT[a];
}

const char *rp_store_sub_name(rp_store_sub s) {
    assert(s >= 0 && s < RP_SUB_COUNT);
    return SUB[s];
}

int rp_store_path(char *buf, size_t cap, const char *dir, rp_artifact a) {
    return rp_pathf(buf, cap, "%s/%s", dir, rp_artifact_name(a));
}

int rp_store_image_path(char *buf, size_t cap, const char *dir, int i) {
    assert(i >= 0);
    return rp_pathf(buf, cap, "%s/image-%d.png", dir, i);
}

int rp_store_subdir(char *buf, size_t cap, const char *dir, rp_store_sub s) {
    return rp_pathf(buf, cap, "%s/%s", dir, rp_store_sub_name(s));
}

#define TWINS "twins" /* a reference's twins: dir/twins/<name>/, its fp32 shadow's dir/shadow/twins/<name>/ */

int rp_store_twin_dir(char *buf, size_t cap, const char *dir, const char *twin) {
    return rp_pathf(buf, cap, "%s/" TWINS "/%s", dir, twin);
}

int rp_store_has_twins(const char *dir) {
    char p[PATHLEN];
    struct stat sb;
    return !rp_pathf(p, PATHLEN, "%s/" TWINS, dir) && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

rp_status rp_store_adopt_twins(const char *side, const char *dir, rp_error *err) {
    char from[PATHLEN], to[PATHLEN];
    struct stat sb;
    if (rp_pathf(from, PATHLEN, "%s/%s/" TWINS, side, SUB[RP_SUB_SHADOW]) ||
        rp_pathf(to, PATHLEN, "%s/%s", dir, SUB[RP_SUB_SHADOW]))
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", side);
    if (stat(from, &sb) == 0) {
        RP_TRY(rp_store_mkdirs(to, err));
        if (rp_pathf(to, PATHLEN, "%s/%s/" TWINS, dir, SUB[RP_SUB_SHADOW]))
            return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", dir);
        RP_TRY(rp_store_publish_dir(from, to, err));
    }
    if (rp_pathf(from, PATHLEN, "%s/" TWINS, side) || rp_pathf(to, PATHLEN, "%s/" TWINS, dir))
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", side);
    if (stat(from, &sb) != 0) return RP_FAIL(err, RP_ERR_IO, "%s: no twins to move in", from);
    return rp_store_publish_dir(from, to, err);
}

/* ---- files ------------------------------------------------------------------------------- */

rp_status rp_store_mkdirs(const char *path, rp_error *err) {
    char p[PATHLEN];
    if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", path);
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0') continue;
        const char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            return RP_FAIL(err, RP_ERR_IO, "cannot create directory %s: %s", p, strerror(errno));
        *s = c;
        if (!c) break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return RP_FAIL(err, RP_ERR_IO, "%s exists and is not a directory", path);
    return RP_OK;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p) != 0 && errno != ENOENT ? -1 : 0;
}

rp_status rp_store_remove_tree(const char *path, rp_error *err) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? RP_OK : RP_FAIL(err, RP_ERR_IO, "%s: %s", path, strerror(errno));
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return RP_FAIL(err, RP_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
    return RP_OK;
}

/* path.tmp.<pid>.<tid>: several case threads may write at once. */
static int tmp_name(char *buf, const char *path) {
    return rp_pathf(buf, PATHLEN, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)gettid());
}

static rp_status write_text_atomic(const char *path, const char *text, rp_error *err) {
    RP_TRY(rp_atomic_target_ok(path, err));
    char tmp[PATHLEN];
    if (tmp_name(tmp, path)) return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        const int e = errno;
        remove(tmp);
        return RP_FAIL(err, RP_ERR_IO, "cannot write %s: %s", path, strerror(e));
    }
    return RP_OK;
}

rp_status rp_store_write_json(const char *path, const cJSON *j, rp_error *err) {
    char *text = cJSON_Print(j);
    if (!text) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory printing JSON", path);
    rp_status st = write_text_atomic(path, text, err);
    free(text);
    return st;
}

rp_status rp_store_read_json(const char *path, cJSON **out, rp_error *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len + 1 < cap || cap > (256u << 20)) break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    const int bad = ferror(f);
    fclose(f);
    if (!buf) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return RP_FAIL(err, RP_ERR_IO, "%s: read error", path);
    }
    buf[len] = '\0';
    *out = cJSON_ParseWithLength(buf, len);
    free(buf);
    return *out ? RP_OK : RP_FAIL(err, RP_ERR_FORMAT, "%s: not valid JSON", path);
}

rp_status rp_store_copy_file(const char *src, const char *dst, rp_error *err) {
    RP_TRY(rp_atomic_target_ok(dst, err));
    char tmp[PATHLEN];
    if (tmp_name(tmp, dst)) return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", dst);
    FILE *in = fopen(src, "rb");
    if (!in) return RP_FAIL(err, RP_ERR_IO, "cannot open %s: %s", src, strerror(errno));
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        fclose(in);
        return RP_FAIL(err, RP_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    char buf[1 << 16];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    fclose(in);
    ok = fclose(out) == 0 && ok;
    if (!ok || rename(tmp, dst) != 0) {
        remove(tmp);
        return RP_FAIL(err, RP_ERR_IO, "cannot copy %s to %s", src, dst);
    }
    return RP_OK;
}

rp_status rp_store_publish_dir(const char *tmp, const char *dst, rp_error *err) {
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) == 0) return RP_OK;
    if (errno == EEXIST) {
        /* replace an older result in one step: the id never names a partial directory */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_EXCHANGE) == 0) return rp_store_remove_tree(tmp, err);
    }
    if (errno != EINVAL && errno != ENOSYS && errno != EEXIST)
        return RP_FAIL(err, RP_ERR_IO, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    /* a file system without renameat2 flags: move the old one aside first */
    char old[PATHLEN];
    if (rp_pathf(old, PATHLEN, "%s.old.%ld", tmp, (long)gettid())) return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", tmp);
    struct stat sb;
    const int exists = stat(dst, &sb) == 0;
    if (exists && rename(dst, old) != 0)
        return RP_FAIL(err, RP_ERR_IO, "cannot move %s aside: %s", dst, strerror(errno));
    if (rename(tmp, dst) != 0) return RP_FAIL(err, RP_ERR_IO, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    return exists ? rp_store_remove_tree(old, err) : RP_OK;
}

/* ---- JSON numbers ---------------------------------------------------------------------- */

void rp_store_put_num(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddStringToObject(o, key, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

double rp_store_num(const cJSON *o, const char *key, double def) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v)) return strtod(v->valuestring, NULL); /* "inf", "-inf", "nan" */
    return def;
}

static void add_num_to_array(cJSON *arr, double v) {
    cJSON *x = isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    if (x) cJSON_AddItemToArray(arr, x);
}

/* ---- comparing two runs' outputs ------------------------------------------------------- */

rp_status rp_store_compare_images(const char *a, const char *b, int n_images, cJSON *arr, rp_outputs_cmp *s,
                                  rp_error *err) {
    for (int i = 0; n_images < 0 || i < n_images; i++) {
        char pa[PATHLEN], pb[PATHLEN];
        if (rp_store_image_path(pa, sizeof pa, a, i) || rp_store_image_path(pb, sizeof pb, b, i))
            return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s or %s", a, b);
        const int ha = rp_is_file(pa), hb = rp_is_file(pb);
        if (!ha && !hb) {
            if (n_images < 0) break;
            continue; /* neither run decoded item i */
        }
        if (ha != hb) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s exists but %s does not", ha ? pa : pb, ha ? pb : pa);
        rp_image_metrics m;
        RP_TRY(rp_png_pair_metrics(pa, pb, &m, err));
        if (arr) {
            cJSON *e = cJSON_CreateObject();
            if (!e) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
            cJSON_AddNumberToObject(e, "index", i);
            rp_store_put_num(e, "psnr", m.psnr);
            rp_store_put_num(e, "ssim", m.ssim);
            cJSON_AddNumberToObject(e, "max_abs", m.max_abs);
            rp_store_put_num(e, "changed", m.changed);
            rp_store_put_num(e, "changed_gt8", m.changed_gt8);
            cJSON_AddItemToArray(arr, e);
        }
        if (!s->n_images++) {
            s->psnr = INFINITY;
            s->ssim = 1.0;
            s->changed = 0.0;
        }
        if (m.psnr < s->psnr) s->psnr = m.psnr;
        if (!(m.ssim >= s->ssim)) s->ssim = m.ssim; /* a NaN SSIM (too small an image) is kept */
        if (m.changed > s->changed) s->changed = m.changed;
        if (m.max_abs) s->identical = 0;
    }
    return RP_OK;
}

/* Tensor name of f as floats in *x (rp_st_f32_borrow: *own the copy to free, if one was made),
 * its record in *t. */
static rp_status st_floats(const rp_st_file *f, const char *name, float **x, float **own, const rp_st_tensor **t,
                           rp_error *err) {
    *x = *own = NULL;
    if (!(*t = rp_st_find(f, name))) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s has no tensor '%s'", f->path, name);
    return rp_st_f32_borrow(f, *t, x, own, err);
}

/* The latents of b against a into o (and their trajectories when both have one). */
static rp_status compare_latents(const char *a, const char *b, cJSON *o, rp_outputs_cmp *s, rp_error *err) {
    char pa[PATHLEN], pb[PATHLEN];
    if (rp_store_path(pa, sizeof pa, a, RP_ART_LATENTS) || rp_store_path(pb, sizeof pb, b, RP_ART_LATENTS))
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s or %s", a, b);
    const int ha = rp_is_file(pa), hb = rp_is_file(pb);
    if (!ha && !hb) return RP_OK; /* neither kept latents */
    if (ha != hb) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s exists but %s does not", ha ? pa : pb, ha ? pb : pa);
    rp_st_file *fa = NULL, *fb = NULL;
    float *x = NULL, *y = NULL, *xo = NULL, *yo = NULL; /* views into fa, fb or copies (xo, yo) */
    const rp_st_tensor *ta = NULL, *tb = NULL;
    rp_status st = rp_st_open(pa, &fa, err);
    if (st == RP_OK) st = rp_st_open(pb, &fb, err);
    if (st == RP_OK) st = st_floats(fa, "latents", &x, &xo, &ta, err);
    if (st == RP_OK) st = st_floats(fb, "latents", &y, &yo, &tb, err);
    if (st == RP_OK && (!rp_st_same_shape(ta, tb) || ta->numel == 0))
        st = RP_FAIL(err, RP_ERR_SHAPE, "the latents of %s and %s have different shapes", a, b);
    if (st == RP_OK) {
        rp_latent_metrics m;
        rp_latent_metrics_compute(x, y, ta->numel, &m);
        cJSON *l = cJSON_AddObjectToObject(o, "latents");
        rp_store_put_num(l, "max_abs", m.max_abs);
        rp_store_put_num(l, "mean_abs", m.mean_abs);
        rp_store_put_num(l, "rel_l2", m.rel_l2);
        rp_store_put_num(l, "cosine", m.cosine);
        const int bitwise = memcmp(x, y, sizeof(float) * ta->numel) == 0;
        cJSON_AddBoolToObject(l, "bitwise_equal", bitwise);
        s->latents = 1;
        s->max_abs = m.max_abs;
        s->rel_l2 = m.rel_l2;
        if (!bitwise) s->identical = 0;
    }
    free(xo);
    free(yo);
    xo = yo = NULL;
    /* the trajectory is optional: compared when both have one of one shape */
    rp_error e2;
    if (st == RP_OK && rp_st_find(fa, "trajectory") && rp_st_find(fb, "trajectory") &&
        st_floats(fa, "trajectory", &x, &xo, &ta, &e2) == RP_OK &&
        st_floats(fb, "trajectory", &y, &yo, &tb, &e2) == RP_OK && rp_st_same_shape(ta, tb) && ta->ndim >= 1 &&
        ta->shape[0] > 0) {
        const size_t T = (size_t)ta->shape[0];
        double *steps = malloc(sizeof *steps * T);
        cJSON *arr = steps ? cJSON_AddArrayToObject(o, "trajectory_rel_l2") : NULL;
        if (arr) {
            rp_trajectory_rel_l2(x, y, T, ta->numel / T, steps);
            for (size_t t = 0; t < T; t++) add_num_to_array(arr, steps[t]);
        }
        free(steps);
    }
    free(xo);
    free(yo);
    rp_st_close(fa);
    rp_st_close(fb);
    return st;
}

rp_status rp_store_compare_outputs(const char *a, const char *b, int n_images, cJSON *o, rp_outputs_cmp *s,
                                   rp_error *err) {
    memset(s, 0, sizeof *s);
    s->identical = 1;
    s->psnr = INFINITY;
    s->ssim = 1.0;
    RP_TRY(compare_latents(a, b, o, s, err));
    cJSON *arr = cJSON_AddArrayToObject(o, "images");
    if (!arr) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    RP_TRY(rp_store_compare_images(a, b, n_images, arr, s, err));
    if (s->n_images) {
        cJSON *w = cJSON_AddObjectToObject(o, "worst_image");
        rp_store_put_num(w, "psnr", s->psnr);
        rp_store_put_num(w, "ssim", s->ssim);
        rp_store_put_num(w, "changed", s->changed);
    }
    return RP_OK;
}

rp_status rp_store_latents_tensors(rp_st_writer *w, const rp_gen_result *r, const int64_t *seeds,
                                   const int64_t *classes, const int64_t *gidx, rp_error *err) {
    const int B = r->B, flow = rp_family_ops_of(r->family)->cond == RP_COND_TEXT;
    const int64_t lat[4] = {B, r->C, r->h, r->w}, traj[5] = {r->steps + 1, B, r->C, r->h, r->w};
    const int64_t nsteps[1] = {r->steps}, nsig[1] = {r->steps + 1}, nb[1] = {B};
    RP_TRY(rp_st_writer_add(w, "noise", RP_DT_F32, 4, lat, r->noise, err));
    RP_TRY(rp_st_writer_add(w, "latents", RP_DT_F32, 4, lat, r->latents, err));
    RP_TRY(rp_st_writer_add(w, "trajectory", RP_DT_F32, 5, traj, r->trajectory, err));
    RP_TRY(rp_st_writer_add(w, "timesteps", RP_DT_F64, 1, nsteps, r->timesteps, err));
    if (flow) {
        RP_TRY(rp_st_writer_add(w, "sigmas", RP_DT_F64, 1, nsig, r->sigmas, err));
        RP_TRY(rp_st_writer_add(w, "model_timesteps", RP_DT_F64, 1, nsteps, r->model_t, err));
    } else {
        RP_TRY(rp_st_writer_add(w, "alphas_cumprod", RP_DT_F64, 1, nsteps, r->alphas_cumprod, err));
        RP_TRY(rp_st_writer_add(w, "classes", RP_DT_I64, 1, nb, classes, err));
    }
    RP_TRY(rp_st_writer_add(w, "seeds", RP_DT_I64, 1, nb, seeds, err));
    return rp_st_writer_add(w, "global_index", RP_DT_I64, 1, nb, gidx, err);
}
