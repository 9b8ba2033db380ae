/* trace.h — per-layer activation statistics of model evaluations.
 *
 * The classifier compares a candidate's trace with a reference's layer by
 * layer, so each record holds numbers that survive any parallel layout: the
 * L2 norm, the max-abs and a fixed strided sample of up to max_samples values
 * (element indices 0, s, 2s, ... with s = ceil(numel / max_samples)). */
#ifndef REPRO_TRACE_H
#define REPRO_TRACE_H

#include <stddef.h>

#include "error.h"

typedef struct rp_trace_rec {
    char name[96];   /* layer name as in the state_dict prefix, e.g. "blocks.3.attn" */
    int eval;        /* model evaluation index (0 = first) */
    size_t numel;
    double l2;
    double maxabs;
    size_t stride;   /* sample stride */
    int nsample;
    float *sample;   /* (nsample): its own allocation, or a view into the trace's backing file */
    int borrowed;    /* sample is a view (rp_st_f32_view) into rp_trace.backing, not freed */
} rp_trace_rec;

typedef struct rp_trace {
    int record_evals;  /* record evaluations 0 .. record_evals-1 (default 1: the first only) */
    int max_samples;   /* default 4096 */
    int eval;          /* current evaluation index; the caller advances it */
    int n, cap;
    rp_trace_rec *recs;
    int n_notes;       /* free-form key=value notes (e.g. "attention=math") */
    char **notes;
    struct rp_st_file *backing; /* a trace read from a file: the file its borrowed samples
                                 * point into, closed by rp_trace_free; else NULL */
} rp_trace;

void rp_trace_init(rp_trace *t);
void rp_trace_free(rp_trace *t);

/* Records x (n floats) under name for the current eval, if it is recorded: one cell of
 * width n (rp_trace_record_cells). */
void rp_trace_record(rp_trace *t, const char *name, const float *x, size_t n);

/* Records x (ncell, width) under name for the current eval, if it is recorded: l2 is the
 * square root of the cells' sums of squares (each over its width elements in order)
 * added in cell order, maxabs the largest |x| (NaN when any is), the samples every
 * stride-th element. */
void rp_trace_record_cells(rp_trace *t, const char *name, const float *x, size_t ncell, size_t width);

/* A record assembled from parts held in several places (rp_par_trace): rp_trace_begin
 * appends the record of a numel-element tensor for the current eval (NULL when the eval
 * is not recorded or memory runs out) with its stride and zeroed samples;
 * rp_trace_cell takes cell `cell` (width elements at x): writes the samples that fall in
 * it, folds its |x| into *maxabs and returns its sum of squares; rp_trace_finish sets l2
 * from all ncell sums in cell order and maxabs. Equal cells give rp_trace_record_cells'
 * bits. */
rp_trace_rec *rp_trace_begin(rp_trace *t, const char *name, size_t numel);
/* The sample stride of a numel-element record (every stride-th element, at most max_samples). */
static inline size_t rp_trace_stride(size_t numel, int max_samples) {
    const size_t m = max_samples > 0 ? (size_t)max_samples : 1;
    return numel ? (numel + m - 1) / m : 1;
}
double rp_trace_cell(const rp_trace_rec *r, const float *x, size_t cell, size_t width, double *maxabs);
void rp_trace_finish(rp_trace_rec *r, const double *ss, size_t ncell, double maxabs);

/* Appends a note "key=value". */
void rp_trace_note(rp_trace *t, const char *key, const char *value);

/* Marks the end of one model evaluation. */
static inline void rp_trace_next_eval(rp_trace *t) { if (t) t->eval++; }

/* Saves as safetensors: one F32 tensor "e<eval>/<name>" (nsample) of samples per
 * record, with metadata "e<eval>/<name>" = "numel=N,l2=X,maxabs=Y,stride=S" (X, Y
 * printed %.17g, so they read back exactly), one "note/<key>" = value per note
 * (a repeated key keeps its last value) and "trace.max_samples". Recording the
 * same name twice in one eval makes the save fail naming the duplicate. */
rp_status rp_trace_save(const rp_trace *t, const char *path, rp_error *err);

#endif
