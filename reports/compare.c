/* compare.c — comparing stored outputs: one case directory against another
 * (rp_outputs_compare, the metrics a report computes when the runner left
 * none) and a whole run against another (rp_run_compare, `repro compare`). */
#include "reports/report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/image.h"
#include "engine/safetensors.h"
#include "harness/metrics.h"
#include "reports/rutil.h"

/* ---- two result directories ------------------------------------------------------------ */

/* A number array member that may hold inf/nan (stored as strings, as the runner does). */
static void add_num_to_array(cJSON *arr, double v) {
    cJSON *x = isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateString(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    if (x) cJSON_AddItemToArray(arr, x);
}

/* Latents (and trajectory) of b against a into o; *identical cleared when they differ. */
static rp_status cmp_latents(const char *da, const char *db, cJSON *o, int *identical, rp_error *err) {
    char pa[RP_REPORT_PATHLEN], pb[RP_REPORT_PATHLEN];
    rp_pathf(pa, sizeof pa, "%s/latents.safetensors", da);
    rp_pathf(pb, sizeof pb, "%s/latents.safetensors", db);
    if (!rp_is_file(pa) && !rp_is_file(pb)) return RP_OK; /* neither kept latents */
    rp_st_file *fa = NULL, *fb = NULL;
    float *a = NULL, *b = NULL;
    const rp_st_tensor *ta = NULL, *tb = NULL;
    rp_status st = rp_st_open(pa, &fa, err);
    if (st == RP_OK) st = rp_st_open(pb, &fb, err);
    if (st == RP_OK) st = rp_st_read_f32_alloc(fa, "latents", &a, &ta, err);
    if (st == RP_OK) st = rp_st_read_f32_alloc(fb, "latents", &b, &tb, err);
    if (st == RP_OK && (!rp_st_same_shape(ta, tb) || ta->numel == 0))
        st = RP_FAIL(err, RP_ERR_SHAPE, "the latents of %s and %s have different shapes", da, db);
    if (st == RP_OK) {
        rp_latent_metrics m;
        rp_latent_metrics_compute(a, b, ta->numel, &m);
        cJSON *l = cJSON_AddObjectToObject(o, "latents");
        rp_j_put_num(l, "max_abs", m.max_abs);
        rp_j_put_num(l, "mean_abs", m.mean_abs);
        rp_j_put_num(l, "rel_l2", m.rel_l2);
        rp_j_put_num(l, "cosine", m.cosine);
        const int bitwise = memcmp(a, b, sizeof(float) * ta->numel) == 0;
        cJSON_AddBoolToObject(l, "bitwise_equal", bitwise);
        if (!bitwise) *identical = 0;
    }
    free(a);
    free(b);
    a = b = NULL;
    /* the trajectory is optional: compared when both have one of one shape */
    rp_error e2;
    if (st == RP_OK && rp_st_find(fa, "trajectory") && rp_st_find(fb, "trajectory") &&
        rp_st_read_f32_alloc(fa, "trajectory", &a, &ta, &e2) == RP_OK && rp_st_read_f32_alloc(fb, "trajectory", &b, &tb, &e2) == RP_OK &&
        rp_st_same_shape(ta, tb) && ta->ndim >= 1 && ta->shape[0] > 0) {
        const size_t T = (size_t)ta->shape[0];
        double *steps = malloc(sizeof *steps * T);
        cJSON *arr = steps ? cJSON_AddArrayToObject(o, "trajectory_rel_l2") : NULL;
        if (arr) {
            rp_trajectory_rel_l2(a, b, T, ta->numel / T, steps);
            for (size_t t = 0; t < T; t++) add_num_to_array(arr, steps[t]);
        }
        free(steps);
    }
    free(a);
    free(b);
    rp_st_close(fa);
    rp_st_close(fb);
    return st;
}

/* Every image-<i>.png in both directories. */
static rp_status cmp_images(const char *da, const char *db, cJSON *o, int *identical, rp_error *err) {
    cJSON *arr = cJSON_AddArrayToObject(o, "images");
    double wp = INFINITY, ws = 1.0, wc = 0.0;
    int n = 0;
    for (int i = 0;; i++) {
        char pa[RP_REPORT_PATHLEN], pb[RP_REPORT_PATHLEN];
        rp_pathf(pa, sizeof pa, "%s/image-%d.png", da, i);
        rp_pathf(pb, sizeof pb, "%s/image-%d.png", db, i);
        const int ha = rp_is_file(pa), hb = rp_is_file(pb);
        if (!ha && !hb) break;
        if (ha != hb) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s exists but %s does not", ha ? pa : pb, ha ? pb : pa);
        rp_image_metrics m;
        RP_TRY(rp_png_pair_metrics(pa, pb, &m, err));
        cJSON *e = cJSON_CreateObject();
        if (!e) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        cJSON_AddNumberToObject(e, "index", i);
        rp_j_put_num(e, "psnr", m.psnr);
        rp_j_put_num(e, "ssim", m.ssim);
        cJSON_AddNumberToObject(e, "max_abs", m.max_abs);
        rp_j_put_num(e, "changed", m.changed);
        rp_j_put_num(e, "changed_gt8", m.changed_gt8);
        cJSON_AddItemToArray(arr, e);
        if (m.psnr < wp) wp = m.psnr;
        if (m.ssim < ws || isnan(m.ssim)) ws = m.ssim;
        if (m.changed > wc) wc = m.changed;
        if (m.max_abs) *identical = 0;
        n++;
    }
    if (n) {
        cJSON *w = cJSON_AddObjectToObject(o, "worst_image");
        rp_j_put_num(w, "psnr", wp);
        rp_j_put_num(w, "ssim", ws);
        rp_j_put_num(w, "changed", wc);
    }
    return RP_OK;
}

cJSON *rp_outputs_compare(const char *a, const char *b, int *ok) {
    *ok = 0;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    rp_error e;
    rp_error_clear(&e);
    int identical = 1;
    rp_status st = cmp_latents(a, b, o, &identical, &e);
    if (st == RP_OK) st = cmp_images(a, b, o, &identical, &e);
    if (st == RP_OK && !rp_j_get(o, "latents") && cJSON_GetArraySize(rp_j_get(o, "images")) == 0)
        st = RP_FAIL(&e, RP_ERR_NOT_FOUND, "neither %s nor %s holds latents or images", a, b);
    if (st != RP_OK) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        if (o) cJSON_AddStringToObject(o, "error", e.msg);
        return o;
    }
    cJSON_AddBoolToObject(o, "identical", identical);
    *ok = 1;
    return o;
}

/* ---- two runs ------------------------------------------------------------------------------ */

void rp_compare_opts_default(rp_compare_opts *o) {
    o->psnr_min = 30.0;
    o->ssim_min = 0.99;
    o->rel_l2_max = 1e-3;
}

/* A deep copy of j, or NULL for NULL. */
static cJSON *dup(const cJSON *j) { return j ? cJSON_Duplicate(j, 1) : NULL; }

/* dst = src with its own copies of the JSON members; the per-run verdict fields cleared. */
static int rcase_copy(rp_rcase *dst, const rp_rcase *src) {
    *dst = *src;
    dst->config = dup(src->config);
    dst->result = dup(src->result);
    dst->env = dup(src->env);
    dst->classification = NULL; /* the comparison's verdict is its own */
    dst->golden = NULL;
    dst->metrics = NULL;
    dst->env_ref = NULL;
    dst->metrics_computed = 0;
    return (!src->config || dst->config) && (!src->result || dst->result) && (!src->env || dst->env);
}

/* Index of the case of r with that matrix and id, or -1. */
static int find_id(const rp_run *r, const char *matrix, const char *id) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->cases[i].id, id) && !strcmp(r->cases[i].matrix, matrix)) return i;
    return -1;
}

/* The verdict of b's case against a's (both present). */
static void judge(rp_rcase *c, const rp_rcase *ca, const rp_rcase *cb, const rp_compare_opts *o) {
    const int oka = !strcmp(ca->status, "ok"), okb = !strcmp(cb->status, "ok");
    c->classified = 1;
    snprintf(c->verdict_a, sizeof c->verdict_a, "%s", rp_rclass_name(ca->verdict));
    snprintf(c->verdict_b, sizeof c->verdict_b, "%s", rp_rclass_name(cb->verdict));
    char also[160] = "";
    if (ca->verdict != cb->verdict)
        snprintf(also, sizeof also, "; verdict %s on A, %s on B", c->verdict_a, c->verdict_b);
    if (!oka || !okb) {
        /* the run that did not finish decides; a status both share is how the case behaves */
        const rp_rcase *bad = okb ? ca : cb;
        const int k = rp_rclass_parse(bad->status);
        c->verdict = k >= 0 ? k : RP_RC_PENDING;
        if (!strcmp(ca->status, cb->status)) {
            c->pass = c->verdict != RP_V_CRASH && c->verdict != RP_V_HANG;
            snprintf(c->evidence, sizeof c->evidence, "%s on both: %.900s", cb->status, cb->reason);
        } else {
            c->pass = c->verdict == RP_V_SKIPPED;
            snprintf(c->evidence, sizeof c->evidence, "%s on A, %s on B: %.900s", ca->status, cb->status, bad->reason);
        }
        snprintf(c->reason, sizeof c->reason, "%s", bad->reason);
        return;
    }
    int ok = 0;
    cJSON *vs = rp_outputs_compare(ca->dir, cb->dir, &ok);
    c->metrics = cJSON_CreateObject();
    if (c->metrics && vs) {
        cJSON_AddStringToObject(c->metrics, "case", c->id);
        cJSON *ref = cJSON_AddObjectToObject(c->metrics, "reference");
        if (ref) {
            cJSON_AddStringToObject(ref, "id", ca->id);
            cJSON_AddStringToObject(ref, "run", "A");
        }
        cJSON_AddItemToObject(c->metrics, "vs_reference", vs);
        vs = NULL;
    }
    cJSON_Delete(vs);
    c->metrics_computed = 1;
    if (!ok) {
        c->verdict = RP_V_BUG;
        c->pass = 0;
        snprintf(c->evidence, sizeof c->evidence, "the outputs of A and B cannot be compared: %s",
                 rp_j_str(rp_j_get(c->metrics, "vs_reference"), "error", "?"));
        return;
    }
    const cJSON *v = rp_j_get(c->metrics, "vs_reference");
    const double psnr = rp_rcase_psnr(c), ssim = rp_rcase_ssim(c), rel = rp_rcase_rel_l2(c);
    char ps[32], ss[32], ma[32], rl[32];
    rp_fmt_psnr(psnr, ps, sizeof ps);
    rp_fmt_ssim(ssim, ss, sizeof ss);
    rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
    rp_fmt_sci(rel, rl, sizeof rl);
    if (cJSON_IsTrue(rp_j_get(v, "identical"))) {
        c->verdict = RP_V_IDENTICAL;
        c->pass = 1;
        snprintf(c->evidence, sizeof c->evidence, "B is bitwise identical to A%s", also);
        return;
    }
    const int has_images = cJSON_GetArraySize(rp_j_get(v, "images")) > 0;
    const int within = has_images ? (psnr >= o->psnr_min && ssim >= o->ssim_min) : rel <= o->rel_l2_max;
    c->verdict = within ? RP_V_DRIFT : RP_V_BUG;
    c->pass = within;
    if (has_images)
        snprintf(c->evidence, sizeof c->evidence, "B differs from A %s the bounds (PSNR >= %g dB, SSIM >= %g): PSNR %s, SSIM %s, latents max-abs %s%s",
                 within ? "within" : "beyond", o->psnr_min, o->ssim_min, ps, ss, ma, also);
    else
        snprintf(c->evidence, sizeof c->evidence, "B differs from A %s the bound (rel-L2 <= %g): rel-L2 %s, max-abs %s%s",
                 within ? "within" : "beyond", o->rel_l2_max, rl, ma, also);
}

rp_status rp_run_compare(const rp_run *a, const rp_run *b, const rp_compare_opts *o, rp_run *out, rp_error *err) {
    rp_compare_opts def;
    if (!o) {
        rp_compare_opts_default(&def);
        o = &def;
    }
    rp_run_init(out);
    snprintf(out->kind, sizeof out->kind, "compare");
    snprintf(out->source[0], sizeof out->source[0], "%s", a->source[0]);
    snprintf(out->source[1], sizeof out->source[1], "%s", b->source[0]);
    snprintf(out->title, sizeof out->title, "%.200s (A) vs %.200s (B)", a->title, b->title);
    snprintf(out->git, sizeof out->git, "%s", b->git);
    snprintf(out->engine, sizeof out->engine, "%s", b->engine);
    snprintf(out->finished_at, sizeof out->finished_at, "%s", b->finished_at);
    const int total = a->n + b->n;
    out->cases = calloc((size_t)(total ? total : 1), sizeof *out->cases);
    if (!out->cases) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    out->cap = total;
    for (int pass = 0; pass < 2; pass++) {
        const rp_run *self = pass ? b : a, *other = pass ? a : b;
        for (int i = 0; i < self->n; i++) {
            const rp_rcase *cs = &self->cases[i];
            const int j = find_id(other, cs->matrix, cs->id);
            if (pass == 1 && j >= 0) continue; /* done in the first pass */
            const rp_rcase *ca = pass ? NULL : cs, *cb = pass ? cs : (j >= 0 ? &b->cases[j] : NULL);
            rp_rcase *c = &out->cases[out->n++];
            if (!rcase_copy(c, cb ? cb : ca)) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
            snprintf(c->ref_id, sizeof c->ref_id, "%s", c->id);
            c->ref_dir[0] = '\0';
            c->is_ref = 0;
            if (!ca || !cb) {
                c->verdict = RP_V_SKIPPED;
                c->classified = 1;
                c->pass = 1;
                snprintf(c->evidence, sizeof c->evidence, "only in run %s (%s there)", ca ? "A" : "B",
                         (ca ? ca : cb)->status);
                snprintf(c->ref_label, sizeof c->ref_label, "%s", ca ? "this case in run A" : "absent from run A");
                continue;
            }
            snprintf(c->ref_dir, sizeof c->ref_dir, "%s", ca->dir);
            snprintf(c->ref_label, sizeof c->ref_label, "the same case in run A");
            c->env_ref = dup(ca->env);
            judge(c, ca, cb, o);
        }
    }
    return RP_OK;
}
