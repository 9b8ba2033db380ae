/* matrix.h — a YAML sweep file, parsed and expanded into the list of cases.
 *
 * A matrix file (schema: `repro --help-matrix`, docs/matrix.md) names a base
 * case, the items (seeds x prompts or classes), axes to sweep as a cartesian
 * product, include/exclude lists with GitHub-Actions matrix semantics, how a
 * case's reference is derived, a repeat count, tolerances and expected labels.
 *
 * Loading checks the whole file before anything runs: every error comes back
 * as one line "FILE:LINE:COLUMN: field 'PATH': what is wrong" (libyaml marks,
 * 1-based), unknown keys with the nearest known key. Whether a case can run
 * (heads divisible by ulysses, ...) is not decided here but by
 * rp_case_validate (harness/sweep/validate.h): such a case is a CONFIG_ERROR
 * outcome of the sweep, not a malformed file. Value ranges that no case could
 * ever satisfy (a degree of 0, an unknown backend name) are file errors.
 *
 * The case fields and their JSON types come from harness/case/case.c (its normalised
 * JSON and its strict reader), so a field added there is accepted in matrices
 * with no change here. */
#ifndef REPRO_MATRIX_H
#define REPRO_MATRIX_H

#include <stddef.h>
#include <stdio.h>

#include "engine/error.h"
#include "harness/case/case.h"
#include "harness/analysis/classify.h"

#define RP_MATRIX_MAX_CASES 4096
#define RP_MATRIX_MAX_REPEAT 100

/* Per-matrix tolerances of a case against its reference; NaN = not set. */
typedef struct rp_tolerances {
    double latents_max_abs;  /* max |a - b| over the final latents, at most */
    double latents_rel_l2;   /* ||a - b|| / ||a||, at most */
    double psnr_min;         /* dB, at least (every image) */
    double ssim_min;         /* at least (every image) */
    double changed_max;      /* share of pixels changed (0..1), at most (every image) */
} rp_tolerances;

typedef struct rp_matrix_case {
    rp_case c;               /* complete: defaults filled in, name set */
    char id[17];             /* rp_case_id */
    int ref;                 /* index in rp_matrix.cases of its reference (itself for a reference) */
    int is_ref;              /* 1: at least one case (maybe itself) compares against it */
    int swept;               /* 1: from the axes / include lists; 0: added only as a reference */
    int line, col;           /* where it came from (1-based): the include entry, or the axes */
} rp_matrix_case;

typedef struct rp_matrix {
    char path[1024];         /* as given to rp_matrix_load */
    char name[128];          /* "name:" or the file's base name without .yaml / .yml */
    char description[512];
    int repeat;              /* runs per case, >= 1 */
    double timeout_s;        /* deadline of one run of a case (all its ranks); default 900 */
    char launcher[16];       /* "launcher:" local | srun | mpirun; "" = not given (local) */
    int ranks_per_node;      /* "ranks_per_node:" for srun / mpirun; 0 = not given */
    rp_tolerances tol;
    rp_classify_opts cls;    /* "classify:" (harness/analysis/classify.h); defaults when absent */
    int n_cases;
    rp_matrix_case *cases;   /* owned; references before the cases that use them */
} rp_matrix;

/* Reads and expands the matrix file at path into *m (fully overwritten; free
 * with rp_matrix_free, also after an error). Errors: RP_ERR_IO when the file
 * cannot be read, RP_ERR_FORMAT / RP_ERR_INVALID with the one-line message
 * "path:line:column: ..." otherwise. */
rp_status rp_matrix_load(const char *path, rp_matrix *m, rp_error *err);

/* The same on a text in memory; origin names it in messages. */
rp_status rp_matrix_parse(const char *text, size_t len, const char *origin, rp_matrix *m, rp_error *err);

void rp_matrix_free(rp_matrix *m);

/* keep[i] = 1 for the cases matching every filter "KEY=VALUE" (KEY a case
 * field, "id" (prefix) or "name"), plus the references of those cases;
 * n = 0 keeps everything. Errors (RP_ERR_INVALID): a filter without '=', an
 * unknown key (with did-you-mean). keep has m->n_cases entries. */
rp_status rp_matrix_select(const rp_matrix *m, const char *const *filters, int n, unsigned char *keep,
                           rp_error *err);

/* The schema, for `repro --help-matrix` (followed there by the validation rules). */
void rp_matrix_help(FILE *f);

#endif
