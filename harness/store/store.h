/* store.h — the result store: the name of every artifact a case directory holds, writing
 * them atomically, and the one comparison of two stored runs' outputs. Nothing outside
 * this file spells an artifact's name (rp_artifact, rp_store_sub): a renamed artifact is
 * one edit.
 *
 * Layout: <results>/<matrix name>/<case id>/ holds one finished case:
 *   case.json          the case (rp_case_save)
 *   result.json        status (ok | CONFIG_ERROR | CRASH | HANG), reason, failing rank and
 *                      its stderr tail, wall time, a run stamp; written by the runner
 *   env.json, latents.safetensors, image-<i>.png, trace.safetensors, done.json
 *                      written by rank 0 of `repro worker --job case`
 *   rank<r>.out/.err   every rank's output
 *   repeat-<k>/        runs 2..N of the case when the matrix has repeat: N
 *   metrics.json       the case against its reference (and repeats against run 1)
 *   golden.json        with --golden: the case against the golden of its reference
 * and the classifier's (harness/analysis/classify.h; the matrix's classify:, on by default):
 *   classification.json the verdict and its evidence (schema in harness/analysis/verdict.h)
 *   twins/<name>/      a reference's rounding twins (reduce-split, threads, noise-ulp, ...),
 *                      each a run with its own teacher/; made by a launch of their own after
 *                      the reference is published and moved in whole (rp_store_adopt_twins)
 *   teacher/           the case's configuration teacher-forced from its reference's
 *                      trajectory (a reference's: from its own); a case's ends by decoding
 *                      the reference's final latents with its layout (its image-*.png)
 *   shadow/teacher/    a bf16/fp16/tf32 case's layout teacher-forced at fp32 (a reference's,
 *                      with its twins' under shadow/twins/)
 *   invariant/teacher/ the layout teacher-forced under invariant numerics (exact CPU layouts)
 *   invariant/teacher-own/ the same at a bf16 case's own precision
 *   fresh/, fresh-2/   the case alone in fresh launches, when its leak check differed
 *   teacher-golden/, classification-golden.json   with --golden: the same against the golden
 *   each of these runs' directories holds aux.json (how the run ended) and its rank<r>.out/.err
 * A case is built in <results>/<matrix>/.tmp-<id>-<pid>/ and renamed to <id>/
 * when complete, so a directory named by an id is always a finished case: a
 * sweep killed at any point (even SIGKILL) resumes with nothing corrupt, and a
 * finished case is never recomputed (--rerun forces it; --retry-failed reruns
 * CRASH and HANG; an INFRA_ERROR is never stored, so it always runs again).
 * metrics.json is derived: it is recomputed in place when missing or when the
 * reference was rerun since (the run stamps differ);
 * classification.json too (also when the classify options changed), from the runs
 * kept (the classifier's runs are not repeated then: --rerun redoes them).
 * <results>/<matrix>/summary.json lists every selected case, SKIPPED ones with
 * their reason (they get no directory: the hardware may exist elsewhere).
 * <results>/<matrix>/.lock (flock) keeps two sweeps out of one directory.
 *
 * Ownership: paths are written into the caller's buffers; JSON objects returned by
 * rp_store_read_json belong to the caller. Every writer is atomic (a temporary file in
 * the same directory, then rename): a reader never sees half a file. */
#ifndef REPRO_STORE_H
#define REPRO_STORE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "engine/error.h"
#include "engine/gen.h"
#include "engine/safetensors.h"

/* The files of a run directory (case or classifier run) and of a matrix directory. */
typedef enum rp_artifact {
    RP_ART_CASE,           /* case.json: the case as it ran */
    RP_ART_RESULT,         /* result.json: status, failing rank, wall time, runs */
    RP_ART_DONE,           /* done.json: written last; its presence says the directory is whole */
    RP_ART_ENV,            /* env.json: the environment (hardware, libraries, build) */
    RP_ART_LATENTS,        /* latents.safetensors: "latents" (B, C, H, W) and "trajectory" */
    RP_ART_TRACE,          /* trace.safetensors: per-layer statistics (engine/trace.h) */
    RP_ART_TEACHER,        /* teacher.safetensors: a teacher run's one-step states and each step's input */
    RP_ART_REPLICAS,       /* replicas.json: replica consistency (engine/parallel/replica.c) */
    RP_ART_METRICS,        /* metrics.json: the outputs against the reference */
    RP_ART_CLASSIFICATION, /* classification.json: the verdict and its evidence */
    RP_ART_AUX,            /* aux.json: how a classifier run ended */
    RP_ART_GOLDEN,         /* golden.json: a golden's record */
    RP_ART_SUMMARY,        /* summary.json: a matrix directory's sweep summary */
    RP_ART_COUNT
} rp_artifact;

/* The classifier's run directories inside a case directory. */
typedef enum rp_store_sub {
    RP_SUB_TEACHER,           /* teacher/: teacher-forced from the reference's trajectory */
    RP_SUB_SHADOW,            /* shadow/: the fp32 shadow's directory (its twins) */
    RP_SUB_SHADOW_TEACHER,    /* shadow/teacher/: the fp32 shadow's teacher run */
    RP_SUB_INVARIANT_TEACHER, /* invariant/teacher/: the invariant shadow */
    RP_SUB_INVARIANT_OWN_TEACHER, /* invariant/teacher-own/: the invariant shadow at the case's own
                                 precision (one coarser than fp32: rp_cls_invariant_shadow_own) */
    RP_SUB_FRESH,             /* fresh/: the case again in a fresh launch (leak or nondeterminism) */
    RP_SUB_FRESH_2,           /* fresh-2/: and once more */
    RP_SUB_SHADOW_LEAK,       /* shadow/leak/: the fp32 shadow's first steps recomputed after it */
    RP_SUB_FRESH_FP32,        /* fresh-fp32/: the case at fp32 in a fresh launch (the shadow's
                                 leak check differed) */
    RP_SUB_FRESH_FP32_2,      /* fresh-fp32-2/: and once more */
    RP_SUB_SELF,              /* self/: every step again from the case's own trajectory */
    RP_SUB_FRESH_SELF,        /* fresh-self/: the same as a fresh launch's first call (the self
                                 check differed), rotated as the self check was */
    RP_SUB_FRESH_SELF_PLAIN,  /* fresh-self-plain/: the same steps unrotated (a rotated fresh-self
                                 differed) */
    RP_SUB_EMULATION,         /* emulation/: a PipeFusion case's serial emulation (one stage,
                                 the same patches; rp_cls_emulation) */
    RP_SUB_DECODE_OWN,        /* decode-own/: the reference's final latents decoded with the case's
                                 layout and its own decoder arithmetic (rp_cls_own_decode_rule) */
    RP_SUB_COUNT
} rp_store_sub;

const char *rp_artifact_name(rp_artifact a);
const char *rp_store_sub_name(rp_store_sub s);

/* dir/<artifact>, dir/image-<i>.png, dir/<sub>, dir/twins/<twin> (a reference's rounding
 * twins; the fp32 shadow's are under dir/shadow/twins/, each twin's teacher run in its
 * teacher/) into buf. Each returns 0, or 1 when buf (cap bytes) was too small (buf then
 * holds a truncated path and must not be used). */
int rp_store_path(char *buf, size_t cap, const char *dir, rp_artifact a);
int rp_store_image_path(char *buf, size_t cap, const char *dir, int i);
int rp_store_subdir(char *buf, size_t cap, const char *dir, rp_store_sub s);
int rp_store_twin_dir(char *buf, size_t cap, const char *dir, const char *twin);

/* Whether dir holds a reference's twins (dir/twins/; rp_store_adopt_twins moves it in whole). */
int rp_store_has_twins(const char *dir);

/* Moves the twins a launch of their own wrote under side into the reference's directory dir:
 * side/shadow/twins/ (the fp32 shadow's, when there) to dir/shadow/twins/, then side/twins/ to
 * dir/twins/, each replacing one there, so that dir/twins/ appearing says both are whole. */
rp_status rp_store_adopt_twins(const char *side, const char *dir, rp_error *err);

/* ---- files ------------------------------------------------------------------------------- */

/* mkdir -p path (mode 0777 & ~umask); RP_ERR_IO naming the part that failed. */
rp_status rp_store_mkdirs(const char *path, rp_error *err);

/* rm -rf path without following symlinks; a missing path is fine. */
rp_status rp_store_remove_tree(const char *path, rp_error *err);

/* Writes j (pretty-printed) to path atomically (path.tmp.<pid>.<tid>, rename). */
rp_status rp_store_write_json(const char *path, const cJSON *j, rp_error *err);

/* Parses the JSON file at path into *out (caller deletes). RP_ERR_IO when it
 * cannot be read, RP_ERR_FORMAT when it is not JSON. */
rp_status rp_store_read_json(const char *path, cJSON **out, rp_error *err);

/* Copies the regular file src to dst (dst written whole, then renamed). */
rp_status rp_store_copy_file(const char *src, const char *dst, rp_error *err);

/* Puts the finished directory tmp in place of dst: rename, or an atomic
 * exchange when dst exists (the old one is then removed). */
rp_status rp_store_publish_dir(const char *tmp, const char *dst, rp_error *err);

/* JSON has no inf/nan: o[key] = v, stored as "inf", "-inf" or "nan" when not finite
 * (rp_store_num reads either form back; def when the key is absent). */
void rp_store_put_num(cJSON *o, const char *key, double v);
double rp_store_num(const cJSON *o, const char *key, double def);

/* ---- comparing two runs' outputs ------------------------------------------------------- */

/* What rp_store_compare_outputs found (b against the reference a). */
typedef struct rp_outputs_cmp {
    int latents;             /* 1: both runs kept latents and they were compared */
    int identical;           /* latents bitwise equal and every image equal */
    double max_abs, rel_l2;  /* latents */
    int n_images;            /* images compared */
    double psnr, ssim;       /* the worst image's (inf, 1 with none) */
    double changed;          /* the largest share of changed pixels */
} rp_outputs_cmp;

/* Compares run directory b with the reference run directory a into o:
 *   "latents": {max_abs, mean_abs, rel_l2, cosine, bitwise_equal} (when either kept latents),
 *   "trajectory_rel_l2": [per step] (when both kept a trajectory of one shape),
 *   "images": [{index, psnr, ssim, max_abs, changed, changed_gt8}],
 *   "worst_image": {psnr, ssim, changed} (when an image was compared).
 * Images: image-<i>.png for i < n_images (n_images < 0: from 0 until neither has one);
 * an index neither run decoded is skipped, one that only one of them has is an error
 * naming it. Latents in one run only, or of different shapes, are an error too. */
rp_status rp_store_compare_outputs(const char *a, const char *b, int n_images, cJSON *o, rp_outputs_cmp *s,
                                   rp_error *err);

/* Only the images (as above) into the array arr (may be NULL); s's image fields and
 * identical (cleared by a differing image) are updated. */
rp_status rp_store_compare_images(const char *a, const char *b, int n_images, cJSON *arr, rp_outputs_cmp *s,
                                  rp_error *err);

/* The tensors of a latents-v1 file (latents.safetensors, `repro generate --latents`), in
 * their order, into w: noise, latents (B, C, h, w), trajectory (steps + 1, B, C, h, w),
 * timesteps (steps); then sigmas (steps + 1) and model_timesteps (steps) for a flow model,
 * or alphas_cumprod (steps) and classes (B) for DiT; then seeds and global_index (B).
 * seeds, classes, gidx: (r->B). The caller adds the metadata. */
rp_status rp_store_latents_tensors(rp_st_writer *w, const rp_gen_result *r, const int64_t *seeds,
                                   const int64_t *classes, const int64_t *gidx, rp_error *err);

#endif
