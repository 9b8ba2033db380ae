/* trace.c — per-layer activation statistics (see trace.h).
 *
 * Statistics are computed in double in index order, so a record depends only
 * on the values recorded, never on threads or layout. A NaN anywhere makes l2
 * and maxabs NaN: a trace must show a NaN layer, not hide it. */
#include "trace.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

void rp_trace_init(rp_trace *t) {
    memset(t, 0, sizeof *t);
    t->record_evals = 1;
    t->max_samples = 4096;
}

void rp_trace_free(rp_trace *t) {
    if (!t) return;
    for (int i = 0; i < t->n; i++) free(t->recs[i].sample);
    for (int i = 0; i < t->n_notes; i++) free(t->notes[i]);
    free(t->recs);
    free(t->notes);
    int re = t->record_evals, ms = t->max_samples;
    memset(t, 0, sizeof *t);
    t->record_evals = re; /* keep settings: a freed trace can be reused */
    t->max_samples = ms;
}

void rp_trace_record(rp_trace *t, const char *name, const float *x, size_t n) {
    if (!t || t->eval < 0 || t->eval >= t->record_evals) return;
    assert(name && (x || n == 0) && t->max_samples > 0);
    /* Allocation failures below drop data rather than abort: a trace is a
     * diagnostic, and a missing record shows up as such in the comparison. */
    if (t->n == t->cap) {
        int nc = t->cap ? 2 * t->cap : 64;
        rp_trace_rec *nr = realloc(t->recs, (size_t)nc * sizeof *nr);
        if (!nr) return;
        t->recs = nr;
        t->cap = nc;
    }
    rp_trace_rec *r = &t->recs[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->eval = t->eval;
    r->numel = n;
    size_t m = t->max_samples > 0 ? (size_t)t->max_samples : 1; /* asserted above; no /0 in release */
    r->stride = n ? (n + m - 1) / m : 1;
    double ss = 0.0, mx = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        ss += v * v;
        double a = fabs(v);
        if (isnan(a) || a > mx) mx = a; /* once NaN, a > mx is false: stays NaN */
    }
    r->l2 = sqrt(ss);
    r->maxabs = mx;
    size_t ns = n ? (n + r->stride - 1) / r->stride : 0;
    assert(ns <= m);
    if (ns) {
        r->sample = malloc(ns * sizeof *r->sample);
        if (r->sample) {
            for (size_t k = 0; k < ns; k++) r->sample[k] = x[k * r->stride];
            r->nsample = (int)ns;
        }
    }
}

void rp_trace_note(rp_trace *t, const char *key, const char *value) {
    if (!t) return;
    size_t len = strlen(key) + strlen(value) + 2;
    char *s = malloc(len);
    char **nn = s ? realloc(t->notes, (size_t)(t->n_notes + 1) * sizeof *nn) : NULL;
    if (!nn) { free(s); return; } /* see rp_trace_record on dropping under OOM */
    snprintf(s, len, "%s=%s", key, value);
    t->notes = nn;
    t->notes[t->n_notes++] = s;
}

rp_status rp_trace_save(const rp_trace *t, const char *path, rp_error *err) {
    assert(t && path);
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "%s: out of memory", path);
    rp_status s = RP_OK;
    char key[160], val[256];
    for (int i = 0; i < t->n && s == RP_OK; i++) {
        const rp_trace_rec *r = &t->recs[i];
        snprintf(key, sizeof key, "e%d/%s", r->eval, r->name);
        int64_t shape[1] = {r->nsample};
        s = rp_st_writer_add(w, key, RP_DT_F32, 1, shape, r->sample, err);
        if (s != RP_OK) break;
        /* %.17g: doubles round-trip exactly through the text */
        snprintf(val, sizeof val, "numel=%zu,l2=%.17g,maxabs=%.17g,stride=%zu", r->numel, r->l2,
                 r->maxabs, r->stride);
        s = rp_st_writer_meta(w, key, val, err);
    }
    /* Notes go under "note/<key>" (a key noted twice keeps its last value). */
    for (int i = 0; i < t->n_notes && s == RP_OK; i++) {
        const char *eq = strchr(t->notes[i], '=');
        assert(eq);
        snprintf(key, sizeof key, "note/%.*s", (int)(eq - t->notes[i]), t->notes[i]);
        s = rp_st_writer_meta(w, key, eq + 1, err);
    }
    if (s == RP_OK) {
        snprintf(val, sizeof val, "%d", t->max_samples);
        s = rp_st_writer_meta(w, "trace.max_samples", val, err);
    }
    if (s == RP_OK) s = rp_st_writer_write(w, path, err);
    rp_st_writer_free(w);
    return s;
}
