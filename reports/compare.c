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

#include "harness/metrics/metrics.h"
#include "harness/store/store.h"
#include "reports/rutil.h"

/* ---- two result directories ------------------------------------------------------------ */

cJSON *rp_outputs_compare(const char *a, const char *b, int *ok) {
    *ok = 0;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    rp_error e;
    rp_error_clear(&e);
    rp_outputs_cmp c;
    rp_status st = rp_store_compare_outputs(a, b, -1, o, &c, &e);
    if (st == RP_OK && !c.latents && !c.n_images)
        st = RP_FAIL(&e, RP_ERR_NOT_FOUND, "neither %s nor %s holds latents or images", a, b);
    if (st != RP_OK) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
        if (o) cJSON_AddStringToObject(o, "error", e.msg);
        return o;
    }
    cJSON_AddBoolToObject(o, "identical", c.identical);
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
