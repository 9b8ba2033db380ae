/* model.c — the report's view of a result store: loading a run (rp_run_load),
 * deciding each case's displayed verdict (rp_rcase_resolve) and reading its
 * metrics and per-step series. See report.h. */
#include "reports/report.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/parallel/strategy.h"
#include "harness/case/case.h"
#include "harness/store/store.h"
#include "reports/rutil.h"

/* ---- display classes ---------------------------------------------------------------- */

static const int ORDER[RP_RC_COUNT] = {
    RP_V_BUG, RP_V_MISMATCH, RP_V_CRASH, RP_V_HANG, RP_V_NONDETERMINISTIC, RP_V_CONFIG_ERROR,
    RP_V_APPROX, RP_RC_UNCLASSIFIED, RP_RC_PENDING, RP_V_DRIFT, RP_V_IDENTICAL, RP_V_SKIPPED};

const char *rp_rclass_name(int k) {
    if (k >= 0 && k < RP_V_COUNT) return rp_verdict_name((rp_verdict)k);
    if (k == RP_RC_UNCLASSIFIED) return "unclassified";
    if (k == RP_RC_PENDING) return "pending";
    return NULL;
}

int rp_rclass_parse(const char *s) {
    for (int k = 0; k < RP_RC_COUNT; k++)
        if (!strcmp(s, rp_rclass_name(k))) return k;
    return -1;
}

rp_tone rp_rclass_tone(int k) {
    switch (k) {
    case RP_V_BUG: case RP_V_MISMATCH: case RP_V_CRASH: case RP_V_HANG: case RP_V_NONDETERMINISTIC:
        return RP_TONE_RED;
    case RP_V_CONFIG_ERROR: case RP_V_APPROX: return RP_TONE_AMBER;
    case RP_V_IDENTICAL: case RP_V_DRIFT: return RP_TONE_GREEN;
    case RP_V_SKIPPED: return RP_TONE_GREY;
    default: return RP_TONE_BLUE;
    }
}

int rp_rclass_rank(int k) {
    for (int i = 0; i < RP_RC_COUNT; i++)
        if (ORDER[i] == k) return i;
    return RP_RC_COUNT;
}

const int *rp_rclass_order(void) { return ORDER; }

/* ---- run -------------------------------------------------------------------------------- */

void rp_run_init(rp_run *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->kind, sizeof r->kind, "run");
}

/* Frees the JSON the case owns. */
static void rcase_free(rp_rcase *c) {
    cJSON_Delete(c->config);
    cJSON_Delete(c->result);
    cJSON_Delete(c->classification);
    cJSON_Delete(c->golden);
    cJSON_Delete(c->metrics);
    cJSON_Delete(c->env);
    cJSON_Delete(c->env_ref);
}

void rp_run_free(rp_run *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) rcase_free(&r->cases[i]);
    free(r->cases);
    r->cases = NULL;
    r->n = r->cap = 0;
}

/* A new zeroed case at the end of r (NULL out of memory). */
static rp_rcase *run_add(rp_run *r) {
    if (r->n == r->cap) {
        const int cap = r->cap ? 2 * r->cap : 16;
        rp_rcase *p = realloc(r->cases, sizeof *p * (size_t)cap);
        if (!p) return NULL;
        r->cases = p;
        r->cap = cap;
    }
    rp_rcase *c = &r->cases[r->n++];
    memset(c, 0, sizeof *c);
    c->verdict = RP_RC_PENDING;
    c->pass = 1;
    c->wall_s = NAN;
    return c;
}

/* Index of the case with that id (and matrix, unless NULL) from index from on; -1 none. */
static int find_case(const rp_run *r, int from, const char *matrix, const char *id) {
    for (int i = from; i < r->n; i++)
        if (!strcmp(r->cases[i].id, id) && (!matrix || !strcmp(r->cases[i].matrix, matrix))) return i;
    return -1;
}

/* The first line of s into out. */
static void first_line(const char *s, char *out, size_t cap) {
    const char *nl = strchr(s, '\n');
    const size_t n = nl ? (size_t)(nl - s) : strlen(s);
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), s);
}

/* Reads an optional JSON file into *out (NULL when absent). A file that is
 * there but unreadable or not JSON is noted in note (first one wins). */
static void read_optional(const char *dir, const char *name, cJSON **out, char *note, size_t cap) {
    char p[RP_REPORT_PATHLEN];
    *out = NULL;
    if (rp_pathf(p, sizeof p, "%s/%s", dir, name) || !rp_is_file(p)) return;
    rp_error e;
    rp_error_clear(&e);
    if (rp_store_read_json(p, out, &e) != RP_OK) {
        *out = NULL;
        if (!note[0]) rp_copy(note, cap, e.msg);
    }
}

/* Loads the case directory cdir into c (id, matrix already set). */
static void load_case_dir(rp_rcase *c, const char *cdir) {
    char note[512] = "";
    snprintf(c->dir, sizeof c->dir, "%s", cdir);
    read_optional(cdir, "case.json", &c->config, note, sizeof note);
    read_optional(cdir, "result.json", &c->result, note, sizeof note);
    read_optional(cdir, "classification.json", &c->classification, note, sizeof note);
    read_optional(cdir, "classification-golden.json", &c->golden, note, sizeof note);
    read_optional(cdir, "metrics.json", &c->metrics, note, sizeof note);
    read_optional(cdir, "env.json", &c->env, note, sizeof note);
    if (c->config) {
        /* the normalised form, so every field is there whatever wrote the file */
        rp_case *k = malloc(sizeof *k);
        rp_error e;
        if (k) {
            rp_case_defaults(k);
            if (rp_case_from_json(c->config, "case.json", k, &e) == RP_OK) {
                cJSON *norm = rp_case_to_json(k);
                if (norm) {
                    cJSON_Delete(c->config);
                    c->config = norm;
                }
                rp_case_degrees_text(k, c->degrees, sizeof c->degrees);
                c->world = rp_case_world(k);
                if (!c->name[0]) snprintf(c->name, sizeof c->name, "%s", k->name);
                if (!c->expected[0]) snprintf(c->expected, sizeof c->expected, "%s", k->expect);
            } else if (!note[0]) {
                rp_copy(note, sizeof note, e.msg);
            }
            free(k);
        }
    }
    const cJSON *res = c->result;
    if (res) {
        snprintf(c->status, sizeof c->status, "%s", rp_j_str(res, "status", "pending"));
        if (!c->name[0]) snprintf(c->name, sizeof c->name, "%s", rp_j_str(res, "name", ""));
        first_line(rp_j_str(res, "reason", ""), c->reason, sizeof c->reason);
        c->wall_s = rp_j_num(res, "wall_s", NAN);
        if (!c->world) c->world = (int)rp_j_num(res, "world", 0);
        snprintf(c->finished_at, sizeof c->finished_at, "%s", rp_j_str(res, "finished_at", ""));
        snprintf(c->run_stamp, sizeof c->run_stamp, "%s", rp_j_str(res, "run_stamp", ""));
    } else if (!c->status[0]) {
        snprintf(c->status, sizeof c->status, "pending");
    }
    if (!c->ref_id[0]) {
        const char *r = rp_j_str(rp_j_get(c->metrics, "reference"), "id", "");
        if (!r[0]) r = rp_j_str(c->classification, "reference_id", "");
        snprintf(c->ref_id, sizeof c->ref_id, "%s", r);
    }
    for (c->n_images = 0;; c->n_images++) {
        char p[RP_REPORT_PATHLEN];
        if (rp_store_image_path(p, sizeof p, cdir, c->n_images) || !rp_is_file(p)) break;
    }
    if (note[0] && !c->reason[0]) snprintf(c->reason, sizeof c->reason, "unreadable: %s", note);
}

/* 1 when d looks like a case directory. */
static int is_case_dir(const char *d) {
    char p[RP_REPORT_PATHLEN];
    if (!rp_store_path(p, sizeof p, d, RP_ART_RESULT) && rp_is_file(p)) return 1;
    return !rp_store_path(p, sizeof p, d, RP_ART_CASE) && rp_is_file(p);
}

/* 1 when summary.json at p is a report's (ours) rather than the runner's. */
static int is_report_summary(const cJSON *j) { return rp_j_get(j, "schema_version") != NULL; }

/* Hidden entries (".tmp-<id>-<pid>", ".lock") are never results. */
static int skip_name(const char *n) { return n[0] == '.'; }

/* 1 when d is a matrix directory: the runner's summary.json or a case directory in it. */
static int is_matrix_dir(const char *d) {
    char p[RP_REPORT_PATHLEN];
    if (!rp_store_path(p, sizeof p, d, RP_ART_SUMMARY) && rp_is_file(p)) {
        cJSON *j = NULL;
        rp_error e;
        const int ours = rp_store_read_json(p, &j, &e) == RP_OK && is_report_summary(j);
        cJSON_Delete(j);
        if (!ours) return 1;
    }
    struct dirent **ents = NULL;
    const int n = scandir(d, &ents, NULL, alphasort);
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (!found && !skip_name(ents[i]->d_name) && !rp_pathf(p, sizeof p, "%s/%s", d, ents[i]->d_name) &&
            rp_is_dir(p) && is_case_dir(p))
            found = 1;
        free(ents[i]);
    }
    free(ents);
    return found;
}

/* The last component of p (trailing slashes ignored). */
static const char *base_name(const char *p) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    const char *s = p + n;
    while (s > p && s[-1] != '/') s--;
    return s;
}

/* Appends the cases of the matrix directory mdir to r. */
static rp_status load_matrix(const char *mdir, rp_run *r, rp_error *err) {
    char p[RP_REPORT_PATHLEN], matrix[128];
    /* the matrix name: the directory's, trailing slashes dropped */
    const char *b = base_name(mdir);
    size_t bl = strcspn(b, "/");
    snprintf(matrix, sizeof matrix, "%.*s", (int)(bl < sizeof matrix ? bl : sizeof matrix - 1), b);
    cJSON *sum = NULL;
    if (!rp_store_path(p, sizeof p, mdir, RP_ART_SUMMARY) && rp_is_file(p)) {
        RP_TRY(rp_store_read_json(p, &sum, err));
        if (is_report_summary(sum)) {
            cJSON_Delete(sum);
            sum = NULL;
        }
    }
    if (sum) snprintf(matrix, sizeof matrix, "%s", rp_j_str(sum, "matrix", matrix));
    const int first = r->n;
    const cJSON *e;
    cJSON_ArrayForEach(e, rp_j_get(sum, "cases")) {
        const char *id = rp_j_str(e, "id", "");
        if (!id[0] || find_case(r, first, matrix, id) >= 0) continue;
        rp_rcase *c = run_add(r);
        if (!c) {
            cJSON_Delete(sum);
            return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        }
        snprintf(c->id, sizeof c->id, "%s", id);
        snprintf(c->matrix, sizeof c->matrix, "%s", matrix);
        snprintf(c->name, sizeof c->name, "%s", rp_j_str(e, "name", ""));
        snprintf(c->ref_id, sizeof c->ref_id, "%s", rp_j_str(e, "reference", ""));
        c->is_ref = cJSON_IsTrue(rp_j_get(e, "is_reference"));
        snprintf(c->expected, sizeof c->expected, "%s", rp_j_str(e, "expect", ""));
        snprintf(c->degrees, sizeof c->degrees, "%s", rp_j_str(e, "degrees", ""));
        c->world = (int)rp_j_num(e, "world", 0);
        snprintf(c->status, sizeof c->status, "%s", rp_j_str(e, "status", "pending"));
        first_line(rp_j_str(e, "reason", ""), c->reason, sizeof c->reason);
        c->wall_s = rp_j_num(e, "wall_s", NAN);
        /* a summary may carry the config (SKIPPED cases have no case.json) */
        const cJSON *cfg = rp_j_get(e, "case");
        if (cJSON_IsObject(cfg)) c->config = cJSON_Duplicate(cfg, 1);
        char cdir[RP_REPORT_PATHLEN];
        if (!rp_pathf(cdir, sizeof cdir, "%s/%s", mdir, id) && rp_is_dir(cdir) && is_case_dir(cdir)) {
            /* the store's files are the truth; the summary may predate a rerun */
            c->status[0] = '\0';
            c->reason[0] = '\0';
            cJSON_Delete(c->config);
            c->config = NULL;
            load_case_dir(c, cdir);
        }
    }
    cJSON_Delete(sum);
    struct dirent **ents = NULL;
    const int n = scandir(mdir, &ents, NULL, alphasort);
    rp_status st = RP_OK;
    for (int i = 0; i < n; i++) {
        const char *nm = ents[i]->d_name;
        char cdir[RP_REPORT_PATHLEN];
        if (st == RP_OK && !skip_name(nm) && !rp_pathf(cdir, sizeof cdir, "%s/%s", mdir, nm) && rp_is_dir(cdir) &&
            is_case_dir(cdir)) {
            /* the directory is named by the case id */
            if (find_case(r, first, matrix, nm) < 0) {
                rp_rcase *c = run_add(r);
                if (!c) st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
                else {
                    rp_copy(c->id, sizeof c->id, nm);
                    snprintf(c->matrix, sizeof c->matrix, "%s", matrix);
                    load_case_dir(c, cdir);
                }
            }
        }
        free(ents[i]);
    }
    free(ents);
    if (st != RP_OK) return st;
    /* references: directories and who is one */
    for (int i = first; i < r->n; i++) {
        rp_rcase *c = &r->cases[i];
        if (!c->ref_id[0]) continue;
        const int k = find_case(r, first, matrix, c->ref_id);
        if (k < 0) continue;
        r->cases[k].is_ref = 1;
        if (k == i) {
            snprintf(c->ref_label, sizeof c->ref_label, "itself (a reference)");
        } else {
            snprintf(c->ref_dir, sizeof c->ref_dir, "%s", r->cases[k].dir);
            snprintf(c->ref_label, sizeof c->ref_label, "reference %.200s", r->cases[k].name);
        }
    }
    size_t tl = strlen(r->title);
    snprintf(r->title + tl, sizeof r->title - tl, "%s%s", tl ? ", " : "", matrix);
    return RP_OK;
}

rp_status rp_run_load(const char *dir, rp_run *r, rp_error *err) {
    rp_run_init(r);
    snprintf(r->source[0], sizeof r->source[0], "%s", dir);
    if (!rp_is_dir(dir)) return RP_FAIL(err, RP_ERR_NOT_FOUND, "%s: no such results directory", dir);
    if (is_matrix_dir(dir)) {
        RP_TRY(load_matrix(dir, r, err));
    } else {
        struct dirent **ents = NULL;
        const int n = scandir(dir, &ents, NULL, alphasort);
        rp_status st = RP_OK;
        for (int i = 0; i < n; i++) {
            char p[RP_REPORT_PATHLEN];
            if (st == RP_OK && !skip_name(ents[i]->d_name) &&
                !rp_pathf(p, sizeof p, "%s/%s", dir, ents[i]->d_name) && rp_is_dir(p) && is_matrix_dir(p))
                st = load_matrix(p, r, err);
            free(ents[i]);
        }
        free(ents);
        if (st != RP_OK) return st;
    }
    if (r->n == 0)
        return RP_FAIL(err, RP_ERR_NOT_FOUND,
                       "%s holds no results (expected %s/<case id>/result.json or %s/<matrix>/<case id>/)", dir, dir,
                       dir);
    for (int i = 0; i < r->n; i++) {
        rp_rcase *c = &r->cases[i];
        rp_rcase_resolve(c);
        if (!r->git[0]) snprintf(r->git, sizeof r->git, "%s", rp_j_str(c->result, "git", ""));
        if (!r->engine[0]) snprintf(r->engine, sizeof r->engine, "%s", rp_j_str(c->result, "engine", ""));
        if (strcmp(c->finished_at, r->finished_at) > 0) snprintf(r->finished_at, sizeof r->finished_at, "%s", c->finished_at);
    }
    return RP_OK;
}

/* ---- verdicts ---------------------------------------------------------------------------- */

/* The provisional class of a runner status. */
static int class_of_status(const char *s) {
    if (!strcasecmp(s, "ok")) return RP_RC_UNCLASSIFIED;
    if (!strcasecmp(s, "CONFIG_ERROR")) return RP_V_CONFIG_ERROR;
    if (!strcasecmp(s, "CRASH")) return RP_V_CRASH;
    if (!strcasecmp(s, "HANG")) return RP_V_HANG;
    if (!strcasecmp(s, "SKIPPED")) return RP_V_SKIPPED;
    return RP_RC_PENDING;
}

/* "PSNR 90.28 dB, SSIM 0.99999, 0.018% pixels changed, latents max-abs 4.88e-04" into buf. */
static void metrics_line(const rp_rcase *c, char *buf, size_t cap) {
    char ps[32], ss[32], ch[32], ma[32];
    rp_fmt_psnr(rp_rcase_psnr(c), ps, sizeof ps);
    rp_fmt_ssim(rp_rcase_ssim(c), ss, sizeof ss);
    rp_fmt_pct(rp_rcase_changed(c), ch, sizeof ch);
    rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
    const cJSON *vs = rp_rcase_vs(c);
    const double psnr = rp_rcase_psnr(c);
    if (cJSON_IsTrue(rp_j_get(vs, "identical")) ||
        (cJSON_IsTrue(rp_j_path(vs, "latents", "bitwise_equal", NULL)) && (isnan(psnr) || isinf(psnr)))) {
        snprintf(buf, cap, "bitwise identical to the reference");
        return;
    }
    if (isnan(rp_rcase_psnr(c))) snprintf(buf, cap, "latents max-abs %s", ma);
    else snprintf(buf, cap, "PSNR %s, SSIM %s, %s pixels changed, latents max-abs %s", ps, ss, ch, ma);
}

/* The verdict, pass and evidence from classification.json or, without one,
 * provisionally from the runner's status. */
static void resolve_main(rp_rcase *c) {
    const int det = strcmp(rp_j_str(c->config, "mode", "deterministic"), "fast") != 0;
    const cJSON *cl = c->classification;
    const int v = cl ? rp_verdict_parse(rp_j_str(cl, "verdict", "")) : -1;
    if (cl) {
        const char *ex = rp_j_str(cl, "expected", NULL);
        if (ex) snprintf(c->expected, sizeof c->expected, "%s", ex);
    }
    if (v >= 0) {
        c->verdict = v;
        c->classified = 1;
        const cJSON *pass = rp_j_get(cl, "pass");
        if (cJSON_IsBool(pass)) c->pass = cJSON_IsTrue(pass);
        else c->pass = (c->expected[0] && !strcmp(c->expected, rp_verdict_name((rp_verdict)v))) ||
                       !rp_verdict_fails((rp_verdict)v, det);
        const char *sum = rp_j_str(cl, "summary", "");
        if (sum[0]) first_line(sum, c->evidence, sizeof c->evidence);
        else if (c->reason[0]) snprintf(c->evidence, sizeof c->evidence, "%s", c->reason);
        else metrics_line(c, c->evidence, sizeof c->evidence);
        return;
    }
    c->classified = 0;
    c->verdict = class_of_status(c->status);
    const int matches = c->expected[0] && (!strcasecmp(c->expected, c->status) ||
                                           !strcmp(c->expected, rp_rclass_name(c->verdict)));
    switch (c->verdict) {
    case RP_V_CONFIG_ERROR: case RP_V_CRASH: case RP_V_HANG:
        c->pass = matches;
        snprintf(c->evidence, sizeof c->evidence, "%s", c->reason[0] ? c->reason : c->status);
        break;
    case RP_V_SKIPPED:
        c->pass = 1;
        snprintf(c->evidence, sizeof c->evidence, "%s", c->reason[0] ? c->reason : "skipped on this machine");
        break;
    case RP_RC_UNCLASSIFIED: {
        c->pass = !c->expected[0] || matches || !strcasecmp(c->expected, "ok");
        const cJSON *within = rp_j_path(c->metrics, "tolerances", "within", NULL);
        char line[700];
        if (c->ref_id[0] && !strcmp(c->ref_id, c->id)) snprintf(line, sizeof line, "the reference of its group");
        else if (rp_rcase_vs(c)) metrics_line(c, line, sizeof line);
        else if (c->reason[0]) rp_copy(line, sizeof line, c->reason);
        else snprintf(line, sizeof line, "no comparison with a reference");
        if (cJSON_IsFalse(within)) {
            c->pass = 0;
            snprintf(c->evidence, sizeof c->evidence, "outside the matrix tolerances: %s", line);
        } else {
            snprintf(c->evidence, sizeof c->evidence, "%s (not classified yet)", line);
        }
        break;
    }
    default:
        c->pass = 1;
        snprintf(c->evidence, sizeof c->evidence, "%s", c->reason[0] ? c->reason : "not run");
        break;
    }
    if (c->expected[0] && !matches && c->verdict != RP_RC_UNCLASSIFIED && c->verdict != RP_V_SKIPPED) {
        c->pass = 0;
        size_t l = strlen(c->evidence);
        snprintf(c->evidence + l, sizeof c->evidence - l, " (expected %s)", c->expected);
    }
}

void rp_rcase_resolve(rp_rcase *c) {
    resolve_main(c);
    /* --golden: the verdict against the golden counts as it does in the runner's exit code */
    const int gv = c->golden ? rp_verdict_parse(rp_j_str(c->golden, "verdict", "")) : -1;
    if (gv < 0) return;
    const cJSON *gp = rp_j_get(c->golden, "pass");
    const int det = strcmp(rp_j_str(c->config, "mode", "deterministic"), "fast") != 0;
    const int gpass = cJSON_IsBool(gp) ? cJSON_IsTrue(gp) : !rp_verdict_fails((rp_verdict)gv, det);
    if (gpass) return;
    c->pass = 0;
    char line[400];
    first_line(rp_j_str(c->golden, "summary", ""), line, sizeof line);
    size_t l = strlen(c->evidence);
    snprintf(c->evidence + l, sizeof c->evidence - l, "; against the golden: %s%s%s", rp_verdict_name((rp_verdict)gv),
             line[0] ? ": " : "", line);
}

/* ---- metrics ------------------------------------------------------------------------------- */

const cJSON *rp_rcase_vs(const rp_rcase *c) {
    const cJSON *m = rp_j_get(c->classification, "metrics");
    if (rp_j_get(m, "images") || rp_j_get(m, "latents")) return m;
    const cJSON *vs = rp_j_get(c->metrics, "vs_reference");
    if (rp_j_get(vs, "latents") || rp_j_get(vs, "images")) return vs;
    return NULL;
}

/* The worst value of key over the images (lowest, or highest with hi). */
static double worst_image(const rp_rcase *c, const char *key, int hi) {
    const cJSON *vs = rp_rcase_vs(c);
    const cJSON *imgs = rp_j_get(vs, "images");
    double w = NAN;
    int any = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, imgs) {
        const double v = rp_j_num(e, key, NAN);
        if (!any || (hi ? v > w : v < w) || isnan(v)) w = v;
        any = 1;
        if (isnan(w)) break;
    }
    if (!any) w = rp_j_num(rp_j_get(vs, "worst_image"), key, NAN);
    return w;
}

double rp_rcase_psnr(const rp_rcase *c) { return worst_image(c, "psnr", 0); }
double rp_rcase_ssim(const rp_rcase *c) { return worst_image(c, "ssim", 0); }
double rp_rcase_changed(const rp_rcase *c) { return worst_image(c, "changed", 1); }
double rp_rcase_max_abs(const rp_rcase *c) { return rp_j_num(rp_j_get(rp_rcase_vs(c), "latents"), "max_abs", NAN); }
double rp_rcase_rel_l2(const rp_rcase *c) { return rp_j_num(rp_j_get(rp_rcase_vs(c), "latents"), "rel_l2", NAN); }

/* A JSON array of numbers (or "inf"/"nan" strings) as doubles. */
static double *num_array(const cJSON *a, int *n) {
    *n = 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0) return NULL;
    const int len = cJSON_GetArraySize(a);
    double *v = malloc(sizeof *v * (size_t)len);
    if (!v) return NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        double x = NAN;
        if (cJSON_IsNumber(e)) x = e->valuedouble;
        else if (cJSON_IsString(e)) x = !strcmp(e->valuestring, "inf") ? INFINITY : NAN;
        v[(*n)++] = x;
    }
    return v;
}

double *rp_rcase_series(const rp_rcase *c, const char *which, int *n) {
    const cJSON *ev = rp_j_get(c->classification, "evidence");
    if (!strcmp(which, "local")) return num_array(rp_j_get(ev, "local_errors"), n);
    if (!strcmp(which, "envelope")) return num_array(rp_j_path(ev, "envelope", "steps", NULL), n);
    if (!strcmp(which, "envelope_accumulated")) return num_array(rp_j_path(ev, "envelope", "accumulated", NULL), n);
    assert(!strcmp(which, "accumulated"));
    double *v = num_array(rp_j_get(ev, "accumulated"), n);
    if (!v) v = num_array(rp_j_path(c->classification, "metrics", "steps", NULL), n);
    if (!v) v = num_array(rp_j_get(rp_j_get(c->metrics, "vs_reference"), "trajectory_rel_l2"), n);
    return v;
}

void rp_rcase_field(const rp_rcase *c, const char *key, char *buf, size_t cap) {
    const cJSON *v = rp_j_get(c->config, key);
    buf[0] = '\0';
    if (cJSON_IsString(v)) snprintf(buf, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(buf, cap, "%.15g", v->valuedouble);
    else if (cJSON_IsBool(v)) snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (v) {
        char *s = cJSON_PrintUnformatted(v);
        if (s) snprintf(buf, cap, "%s", s);
        free(s);
    }
}

double rp_rcase_num(const rp_rcase *c, const char *key, double def) { return rp_j_num(c->config, key, def); }

void rp_run_fill_metrics(rp_run *r) {
    for (int i = 0; i < r->n; i++) {
        rp_rcase *c = &r->cases[i];
        if (strcmp(c->status, "ok") || !c->dir[0] || !c->ref_dir[0] || rp_rcase_vs(c)) continue;
        int ok = 0;
        cJSON *vs = rp_outputs_compare(c->ref_dir, c->dir, &ok);
        if (!vs) continue;
        if (!ok) {
            snprintf(c->reason, sizeof c->reason, "cannot compare with the reference: %s",
                     rp_j_str(vs, "error", "?"));
            cJSON_Delete(vs);
            rp_rcase_resolve(c);
            continue;
        }
        if (!c->metrics) {
            c->metrics = cJSON_CreateObject();
            if (!c->metrics) {
                cJSON_Delete(vs);
                continue;
            }
            cJSON_AddStringToObject(c->metrics, "case", c->id);
            cJSON *ref = cJSON_AddObjectToObject(c->metrics, "reference");
            if (ref) cJSON_AddStringToObject(ref, "id", c->ref_id);
        }
        cJSON_DeleteItemFromObjectCaseSensitive(c->metrics, "vs_reference");
        cJSON_AddItemToObject(c->metrics, "vs_reference", vs);
        c->metrics_computed = 1;
        rp_rcase_resolve(c);
    }
}

/* ---- axes ---------------------------------------------------------------------------------- */

/* The layout's fields besides the degrees (engine/parallel/strategy.h). */
static const char *const LAYOUT_FIELDS[] = {"num_pipeline_patch", "pipefusion_layers"};
/* The preferred axes: "degrees", the strategies' degree fields (strategy.h's table), then these. */
static const char *const PREFERRED[] = {"attention", "precision", "warmup_steps", "backend", "device", "mode"};
/* Fields that label a case rather than configure it. */
static const char *const NOT_AXES[] = {"name", "expect", "items"};

/* 1 when s is one of l[0..n). */
static int in_list(const char *s, const char *const *l, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, l[i])) return 1;
    return 0;
}

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* 1 when s is a parallel degree's field or another layout field. */
static int is_layout_field(const char *s) {
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        if (!strcmp(s, rp_par_degree_strategy(i)->field)) return 1;
    return in_list(s, LAYOUT_FIELDS, COUNT_OF(LAYOUT_FIELDS));
}

void rp_rcase_axis_value(const rp_rcase *c, const char *axis, char *buf, size_t cap) {
    if (!strcmp(axis, "degrees")) snprintf(buf, cap, "%s", c->degrees);
    else rp_rcase_field(c, axis, buf, cap);
}

/* 1 when s is a number as a whole. */
static int numeric(const char *s, double *v) {
    char *end;
    if (!s[0]) return 0;
    *v = strtod(s, &end);
    return *end == '\0';
}

char (*rp_run_axis_values(const rp_run *r, const char *axis, int *n))[RP_AXIS_VALUE_LEN] {
    *n = 0;
    char (*v)[RP_AXIS_VALUE_LEN] = calloc((size_t)(r->n ? r->n : 1), RP_AXIS_VALUE_LEN);
    if (!v) return NULL;
    for (int i = 0; i < r->n; i++) {
        char s[RP_AXIS_VALUE_LEN];
        rp_rcase_axis_value(&r->cases[i], axis, s, sizeof s);
        int seen = !s[0]; /* unknown (no config): not a value of the axis */
        for (int k = 0; k < *n && !seen; k++) seen = !strcmp(v[k], s);
        if (!seen) snprintf(v[(*n)++], RP_AXIS_VALUE_LEN, "%s", s);
    }
    int all_num = 1;
    double x, y;
    for (int k = 0; k < *n && all_num; k++) all_num = numeric(v[k], &x);
    if (all_num) /* insertion sort: a handful of values */
        for (int k = 1; k < *n; k++)
            for (int j = k; j > 0 && numeric(v[j - 1], &x) && numeric(v[j], &y) && x > y; j--) {
                char t[RP_AXIS_VALUE_LEN];
                memcpy(t, v[j], sizeof t);
                memcpy(v[j], v[j - 1], sizeof t);
                memcpy(v[j - 1], t, sizeof t);
            }
    return v;
}

/* Distinct values of the axis over the run's cases (cases without a config excluded
 * unless the axis is "degrees"). */
static int distinct(const rp_run *r, const char *axis) {
    int n = 0;
    char (*v)[RP_AXIS_VALUE_LEN] = rp_run_axis_values(r, axis, &n);
    free(v);
    return n;
}

int rp_run_axes(const rp_run *r, char (*axes)[RP_AXIS_LEN], int max) {
    /* candidates: the preferred fields, then the config's own order */
    char cand[96][RP_AXIS_LEN];
    int nc = 0;
    snprintf(cand[nc++], RP_AXIS_LEN, "degrees");
    for (int i = 0; i < RP_PAR_N_DEGREES; i++)
        snprintf(cand[nc++], RP_AXIS_LEN, "%s", rp_par_degree_strategy(i)->field);
    for (size_t i = 0; i < COUNT_OF(PREFERRED); i++) snprintf(cand[nc++], RP_AXIS_LEN, "%s", PREFERRED[i]);
    for (int i = 0; i < r->n; i++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, r->cases[i].config) {
            if (!f->string || in_list(f->string, NOT_AXES, COUNT_OF(NOT_AXES))) continue;
            int seen = 0;
            for (int k = 0; k < nc && !seen; k++) seen = !strcmp(cand[k], f->string);
            if (!seen && nc < (int)COUNT_OF(cand)) snprintf(cand[nc++], RP_AXIS_LEN, "%s", f->string);
        }
    }
    int cnt[96];
    int best_degree = 0;
    for (int k = 0; k < nc; k++) {
        cnt[k] = distinct(r, cand[k]);
        if (is_layout_field(cand[k]) && cnt[k] > best_degree) best_degree = cnt[k];
    }
    /* "degrees" replaces the single degrees only when it says more than each of them */
    const int use_degrees = cnt[0] > best_degree;
    int n = 0;
    for (int want = r->n; want >= 2 && n < max; want--)
        for (int k = 0; k < nc && n < max; k++) {
            if (cnt[k] != want) continue;
            const int is_deg = is_layout_field(cand[k]);
            if (k == 0 ? !use_degrees : (is_deg && use_degrees)) continue;
            snprintf(axes[n++], RP_AXIS_LEN, "%s", cand[k]);
        }
    return n;
}
