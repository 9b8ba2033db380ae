/* json.c — summary.json: the run for machines (schema docs/report-schema.md).
 *
 * Stable order everywhere (cases as loaded, counts in the red-first class
 * order, environments by first use), so equal results give equal bytes. */
#include "reports/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/store/store.h"
#include "reports/rutil.h"

/* s, or null when s is NULL or empty. */
static void add_str_or_null(cJSON *o, const char *key, const char *s) {
    if (s && s[0]) cJSON_AddStringToObject(o, key, s);
    else cJSON_AddNullToObject(o, key);
}

/* v ("inf" / "-inf" strings for infinities), or null for NaN. */
static void add_num_or_null(cJSON *o, const char *key, double v) {
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else rp_j_put_num(o, key, v);
}

/* A per-step series of the case as a JSON array ([] when absent; null for NaN). */
static cJSON *series(const rp_rcase *c, const char *which) {
    int n = 0;
    double *v = rp_rcase_series(c, which, &n);
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        /* NaN: the step was not run (the classifier's null) */
        cJSON *x = isfinite(v[i]) ? cJSON_CreateNumber(v[i])
                   : isnan(v[i])  ? cJSON_CreateNull()
                                  : cJSON_CreateString(v[i] > 0 ? "inf" : "-inf");
        if (x) cJSON_AddItemToArray(a, x);
    }
    free(v);
    return a;
}

/* Index of env in envs (appended when new); -1 when env is NULL. */
static int env_index(cJSON *envs, const cJSON *env) {
    if (!env) return -1;
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, envs) {
        if (cJSON_Compare(e, env, 1)) return i;
        i++;
    }
    cJSON *d = cJSON_Duplicate(env, 1);
    if (!d) return -1;
    cJSON_AddItemToArray(envs, d);
    return i;
}

/* Who computed the case's metrics: "classifier", "runner", "report"; NULL none. */
static const char *metrics_source(const rp_rcase *c) {
    const cJSON *vs = rp_rcase_vs(c);
    if (!vs) return NULL;
    if (vs == rp_j_get(c->classification, "metrics")) return "classifier";
    return c->metrics_computed ? "report" : "runner";
}

/* One entry of "cases" (schema: docs/report-schema.md); envs collects the environments. */
static cJSON *case_json(const rp_rcase *c, cJSON *envs, int compare) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "id", c->id);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "matrix", c->matrix);
    if (c->config) cJSON_AddItemToObject(o, "config", cJSON_Duplicate(c->config, 1));
    else cJSON_AddNullToObject(o, "config");
    cJSON_AddStringToObject(o, "degrees", c->degrees);
    cJSON_AddNumberToObject(o, "world", c->world);
    cJSON *ref = cJSON_AddObjectToObject(o, "reference");
    add_str_or_null(ref, "id", c->ref_id);
    cJSON_AddStringToObject(ref, "label", c->ref_label);
    cJSON_AddBoolToObject(ref, "is_reference", c->is_ref);
    cJSON_AddStringToObject(o, "status", c->status);
    cJSON_AddStringToObject(o, "verdict", rp_rclass_name(c->verdict));
    cJSON_AddStringToObject(o, "verdict_source", compare ? "comparison" : c->classified ? "classification" : "provisional");
    add_str_or_null(o, "expected", c->expected);
    cJSON_AddBoolToObject(o, "pass", c->pass);
    if (compare) {
        add_str_or_null(o, "verdict_a", c->verdict_a);
        add_str_or_null(o, "verdict_b", c->verdict_b);
    }
    if (c->golden) {
        cJSON *g = cJSON_AddObjectToObject(o, "golden");
        cJSON_AddStringToObject(g, "verdict", rp_j_str(c->golden, "verdict", "?"));
        const cJSON *gp = rp_j_get(c->golden, "pass");
        if (cJSON_IsBool(gp)) cJSON_AddBoolToObject(g, "pass", cJSON_IsTrue(gp));
        else cJSON_AddNullToObject(g, "pass");
        cJSON_AddStringToObject(g, "summary", rp_j_str(c->golden, "summary", ""));
        add_str_or_null(g, "reference", rp_j_str(c->golden, "reference_id", NULL));
    } else {
        cJSON_AddNullToObject(o, "golden");
    }
    /* evidence: the one line, the runner's reason, and every member the classifier gave */
    cJSON *ev = cJSON_CreateObject();
    const cJSON *cev = rp_j_get(c->classification, "evidence");
    if (cJSON_IsObject(cev)) {
        cJSON_Delete(ev);
        ev = cJSON_Duplicate(cev, 1);
    }
    if (ev) {
        cJSON_DeleteItemFromObjectCaseSensitive(ev, "summary");
        cJSON_DeleteItemFromObjectCaseSensitive(ev, "reason");
        cJSON_AddItemToObject(o, "evidence", ev);
        cJSON_AddStringToObject(ev, "summary", c->evidence);
        add_str_or_null(ev, "reason", c->reason);
    }
    cJSON *m = cJSON_AddObjectToObject(o, "metrics");
    const cJSON *vs = rp_rcase_vs(c);
    const char *src = metrics_source(c);
    if (src) cJSON_AddStringToObject(m, "source", src);
    else cJSON_AddNullToObject(m, "source");
    const cJSON *lat = rp_j_get(vs, "latents");
    if (lat) cJSON_AddItemToObject(m, "latents", cJSON_Duplicate(lat, 1));
    const cJSON *imgs = rp_j_get(vs, "images");
    cJSON_AddItemToObject(m, "images", imgs ? cJSON_Duplicate(imgs, 1) : cJSON_CreateArray());
    cJSON *w = cJSON_AddObjectToObject(m, "worst");
    add_num_or_null(w, "psnr", rp_rcase_psnr(c));
    add_num_or_null(w, "ssim", rp_rcase_ssim(c));
    add_num_or_null(w, "changed", rp_rcase_changed(c));
    add_num_or_null(w, "latents_max_abs", rp_rcase_max_abs(c));
    add_num_or_null(w, "latents_rel_l2", rp_rcase_rel_l2(c));
    cJSON *st = cJSON_AddObjectToObject(m, "steps");
    cJSON_AddItemToObject(st, "local", series(c, "local"));
    cJSON_AddItemToObject(st, "accumulated", series(c, "accumulated"));
    cJSON_AddItemToObject(st, "envelope", series(c, "envelope"));
    cJSON_AddItemToObject(st, "envelope_accumulated", series(c, "envelope_accumulated"));
    const cJSON *tol = rp_j_get(c->metrics, "tolerances");
    if (tol) cJSON_AddItemToObject(m, "tolerances", cJSON_Duplicate(tol, 1));
    const cJSON *reps = rp_j_get(c->metrics, "repeats");
    if (reps) cJSON_AddItemToObject(m, "repeats", cJSON_Duplicate(reps, 1));
    add_num_or_null(o, "wall_s", c->wall_s);
    add_str_or_null(o, "finished_at", c->finished_at);
    const int ei = env_index(envs, c->env);
    if (ei >= 0) cJSON_AddNumberToObject(o, "env", ei);
    else cJSON_AddNullToObject(o, "env");
    if (compare) {
        const int ea = env_index(envs, c->env_ref);
        if (ea >= 0) cJSON_AddNumberToObject(o, "env_a", ea);
        else cJSON_AddNullToObject(o, "env_a");
    }
    cJSON *files = cJSON_AddObjectToObject(o, "files");
    add_str_or_null(files, "dir", c->dir);
    add_str_or_null(files, "reference_dir", c->ref_dir);
    cJSON_AddNumberToObject(files, "images", c->n_images);
    return o;
}

cJSON *rp_report_json_tree(const rp_run *r, const rp_plots *plots) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    const int compare = !strcmp(r->kind, "compare");
    cJSON_AddNumberToObject(j, "schema_version", RP_REPORT_SCHEMA_VERSION);
    cJSON_AddStringToObject(j, "kind", r->kind);
    cJSON_AddStringToObject(j, "title", r->title);
    cJSON *src = cJSON_AddArrayToObject(j, "sources");
    for (int k = 0; k < (compare ? 2 : 1); k++) cJSON_AddItemToArray(src, cJSON_CreateString(r->source[k]));
    cJSON *gen = cJSON_AddObjectToObject(j, "generator");
    cJSON_AddStringToObject(gen, "tool", "repro");
    cJSON_AddStringToObject(gen, "version", REPRO_VERSION);
    add_str_or_null(j, "engine", r->engine);
    add_str_or_null(j, "git", r->git);
    add_str_or_null(j, "finished_at", r->finished_at);
    int counts[RP_RC_COUNT] = {0}, failing = 0;
    for (int i = 0; i < r->n; i++) {
        counts[r->cases[i].verdict]++;
        failing += !r->cases[i].pass;
    }
    cJSON *tot = cJSON_AddObjectToObject(j, "totals");
    cJSON_AddNumberToObject(tot, "cases", r->n);
    cJSON_AddNumberToObject(tot, "failing", failing);
    cJSON_AddNumberToObject(tot, "passing", r->n - failing);
    cJSON *cnt = cJSON_AddObjectToObject(j, "counts");
    const int *ord = rp_rclass_order();
    for (int k = 0; k < RP_RC_COUNT; k++) cJSON_AddNumberToObject(cnt, rp_rclass_name(ord[k]), counts[ord[k]]);
    char axes[2][RP_AXIS_LEN];
    const int na = rp_run_axes(r, axes, 2);
    cJSON *ax = cJSON_AddArrayToObject(j, "axes");
    for (int k = 0; k < na; k++) cJSON_AddItemToArray(ax, cJSON_CreateString(axes[k]));
    cJSON *envs = cJSON_CreateArray();
    cJSON *cases = cJSON_AddArrayToObject(j, "cases");
    for (int i = 0; i < r->n; i++) {
        cJSON *c = case_json(&r->cases[i], envs, compare);
        if (c) cJSON_AddItemToArray(cases, c);
    }
    cJSON_AddItemToObject(j, "environments", envs);
    cJSON *pl = cJSON_AddArrayToObject(j, "plots");
    for (int k = 0; plots && k < plots->n; k++) {
        const rp_plot *p = &plots->p[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddStringToObject(o, "title", p->title);
        cJSON_AddStringToObject(o, "status", p->written ? "written" : "skipped");
        add_str_or_null(o, "svg", p->written ? p->svg : NULL);
        add_str_or_null(o, "png", p->written ? p->png : NULL);
        add_str_or_null(o, "reason", p->written ? NULL : p->reason);
        add_str_or_null(o, "case", p->case_id);
        cJSON_AddItemToArray(pl, o);
    }
    return j;
}

rp_status rp_report_json(const rp_run *r, const rp_plots *plots, const char *path, rp_error *err) {
    cJSON *j = rp_report_json_tree(r, plots);
    if (!j) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory building %s", path);
    rp_status st = rp_store_write_json(path, j, err);
    cJSON_Delete(j);
    return st;
}
