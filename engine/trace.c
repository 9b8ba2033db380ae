/* trace.c — per-layer activation statistics (see trace.h).
 *
 * Statistics are computed in double in index order, so a record depends only
 * on the values recorded, never on threads or layout: the sum of squares is taken
 * per cell (a run of `width` consecutive elements: one token's features) and the
 * cells' sums added in cell order, so a parallel run whose ranks each hold whole
 * cells can send their sums instead of the tensor (rp_par_trace) and rank 0 gets
 * the serial run's bits. A NaN anywhere makes l2
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
    for (int i = 0; i < t->n; i++)
        if (!t->recs[i].borrowed) free(t->recs[i].sample);
    if (t->backing) rp_st_close(t->backing);
    for (int i = 0; i < t->n_notes; i++) free(t->notes[i]);
    free(t->recs);
    free(t->notes);
    int re = t->record_evals, ms = t->max_samples;
    memset(t, 0, sizeof *t);
    t->record_evals = re; /* keep settings: a freed trace can be reused */
    t->max_samples = ms;
}

rp_trace_rec *rp_trace_begin(rp_trace *t, const char *name, size_t numel) {
    if (!t || t->eval < 0 || t->eval >= t->record_evals) return NULL;
    assert(name && t->max_samples > 0);
    /* Allocation failures below drop data rather than abort: a trace is a
     * diagnostic, and a missing record shows up as such in the comparison. */
    if (t->n == t->cap) {
        int nc = t->cap ? 2 * t->cap : 64;
        rp_trace_rec *nr = realloc(t->recs, (size_t)nc * sizeof *nr);
        if (!nr) return NULL;
        t->recs = nr;
        t->cap = nc;
    }
    rp_trace_rec *r = &t->recs[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->eval = t->eval;
    r->numel = numel;
    r->stride = rp_trace_stride(numel, t->max_samples);
    size_t ns = numel ? (numel + r->stride - 1) / r->stride : 0;
    assert(ns <= (size_t)t->max_samples);
    if (ns && (r->sample = calloc(ns, sizeof *r->sample))) r->nsample = (int)ns;
    return r;
}

double rp_trace_cell(const rp_trace_rec *r, const float *x, size_t cell, size_t width, double *maxabs) {
    assert(r && (x || width == 0) && maxabs);
    double ss = 0.0, mx = *maxabs;
    for (size_t i = 0; i < width; i++) {
        double v = x[i];
        ss += v * v;
        double a = fabs(v);
        if (isnan(a) || a > mx) mx = a; /* once NaN, a > mx is false: stays NaN */
    }
    *maxabs = mx;
    /* the samples are every stride-th element of the whole tensor: those in this cell */
    const size_t lo = cell * width, hi = lo + width;
    for (size_t k = (lo + r->stride - 1) / r->stride; k < (size_t)r->nsample && k * r->stride < hi; k++)
        r->sample[k] = x[k * r->stride - lo];
    return ss;
}

void rp_trace_finish(rp_trace_rec *r, const double *ss, size_t ncell, double maxabs) {
    assert(r && (ss || ncell == 0));
    double s = 0.0;
    for (size_t c = 0; c < ncell; c++) s += ss[c];
    r->l2 = sqrt(s);
    r->maxabs = maxabs;
}

void rp_trace_record_cells(rp_trace *t, const char *name, const float *x, size_t ncell, size_t width) {
    assert(x || ncell * width == 0);
    rp_trace_rec *r = rp_trace_begin(t, name, ncell * width);
    if (!r) return;
    double s = 0.0, mx = 0.0; /* the cells' sums added in cell order, as rp_trace_finish */
    for (size_t c = 0; c < ncell; c++) s += rp_trace_cell(r, x + c * width, c, width, &mx);
    r->l2 = sqrt(s);
    r->maxabs = mx;
}

void rp_trace_record(rp_trace *t, const char *name, const float *x, size_t n) {
    rp_trace_record_cells(t, name, x, 1, n);
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
