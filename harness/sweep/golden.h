/* golden.h — a store of reference outputs recorded on some machine, to compare
 * runs on other hardware against (the nightly cross-hardware check).
 *
 * Layout: <store>/<case id>/ with the files of a finished reference case
 * (case.json, env.json, result.json, latents.safetensors, image-<i>.png,
 * trace.safetensors, done.json) plus golden.json: which matrix recorded it,
 * when, the engine version and host. A golden is found by the case's config
 * (its normalised JSON without the labels name/expect), not by its path or id,
 * so goldens recorded by another engine version or another matrix still match
 * a case with the same config; the engine version each side ran is reported. */
#ifndef REPRO_GOLDEN_H
#define REPRO_GOLDEN_H

#include <stdio.h>

#include "engine/error.h"
#include "harness/case/case.h"

typedef struct rp_golden_store rp_golden_store;

/* Indexes every <dir>/<x>/case.json. A missing or unreadable dir is an error;
 * entries whose case.json does not load are skipped with a note on stderr. */
rp_status rp_golden_open(const char *dir, rp_golden_store **out, rp_error *err);

/* The directory of the golden recorded for c's config, or NULL. The string
 * lives as long as g. */
const char *rp_golden_find(const rp_golden_store *g, const rp_case *c);

int rp_golden_count(const rp_golden_store *g);

void rp_golden_close(rp_golden_store *g);

/* Records the finished case directory src (a reference with status ok) as
 * <store>/<id>/, built under a temporary name and renamed, replacing an
 * earlier recording of the same id. */
rp_status rp_golden_save(const char *store, const char *src, const rp_case *c, const char *matrix_name,
                         rp_error *err);

/* One line per golden: id, model, degrees, where and when it was recorded. */
rp_status rp_golden_list(const char *dir, FILE *f, rp_error *err);

#endif
