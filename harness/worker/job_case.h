/* job_case.h — `repro worker --job case`: one rank of one case of a sweep.
 *
 *   repro worker --job case --case-file case.json --out-dir DIR [comm options]
 *
 * Every rank: loads the case (harness/case/case.h), validates it against the launched
 * world (harness/sweep/validate.h: a failure is exit 3, before any rank waits on another),
 * switches OpenBLAS core if the case names one (re-exec), creates the communicator
 * of the case's backend, splits it into xDiT's groups (engine/parallel/parallel.h),
 * shares and verifies the item list (dp), generates its items under the layout and
 * sends its results to rank 0. Rank 0 then writes, in DIR:
 *   latents.safetensors  noise, latents, trajectory, timesteps (and the schedule's
 *                        other arrays), seeds, global_index[, classes] in input order;
 *                        the case and layout as metadata (same tensors as
 *                        `repro generate --latents`, so `repro diff` reads it)
 *   image-<i>.png        item i decoded (by its dp group's leader)
 *   trace.safetensors    the first evaluation's per-layer trace, in the single-rank
 *                        layout (the shards and groups are gathered before recording)
 *   env.json             harness/sweep/env.h
 *   done.json            last, atomically: the case id, layout, timings, item count
 * The classifier's modes (harness/analysis/classify.h):
 *   --teacher-force REF_DIR [--teacher-steps N]  each step k (all, or N spread; every step
 *                        for pipefusion/patch, whose state follows the step) runs ONCE from
 *                        REF_DIR's trajectory row k (same items and steps; same ancestral
 *                        noise); rank 0 writes teacher.safetensors ("teacher" (steps + 1,
 *                        items, C, h, w): row 0 the reference's x_T, row k + 1 the state
 *                        after step k; "steps" (steps) 1 where a step ran, as F32), the trace
 *                        of every evaluation, env.json and done.json; nothing is decoded
 *   --perturb-noise      one ulp up on the first value of each item's initial noise
 *   --leak-check         before the case, the same layout runs another case (every seed + 1)
 *                        in this process; the case's outputs are written, not decoded
 * The runner asks for them in the case's own launch instead (a launch, its rendezvous and
 * its weights cost more than a tiny case's run): --then-twins N, --then-teacher REF_DIR and
 * --then-invariant run them after the case's outputs are written, each into its directory
 * (twins/<name>/ [with teacher/], teacher/, shadow/, invariant/teacher/) with an aux.json
 * saying how it ended; a failed one is recorded there, the later ones are skipped, and the
 * launch still exits 0. --then-leak makes a later run of the launch recompute steps from the
 * case's own input after the case's run has left its state (its evidence: rp_cls_rerun_check
 * on the teacher run). A reference's twins may run in a launch of their own instead, beside
 * its cases' launches (--twins-apart in the reference's, --twins-of REF_DIR in theirs).
 * Exit codes: those of `repro worker` (backends/launch.h): 0 ok, 1 failed, 3 config
 * (invalid or unsupported case, item lists that do not verify), 4 a communication
 * timeout. */
#ifndef REPRO_JOB_CASE_H
#define REPRO_JOB_CASE_H

#include "backends/comm.h"
#include "harness/worker/rankenv.h"

typedef struct rp_job_case_opts {
    const char *case_file;
    const char *out_dir;
    rp_comm_opts comm;  /* the worker's: rank, world, store, prefix, timeout...; the kind
                           is the case's backend */
    int backend_given;  /* the worker got --backend: it must name the case's backend */
    /* the classifier's runs of a case (harness/analysis/classify.h); 0 / NULL in normal runs */
    const char *teacher_ref; /* --teacher-force REF_DIR: teacher forcing from REF_DIR's trajectory */
    int teacher_steps;       /* --teacher-steps N: 0 every step, else N spread (rp_cls_teacher_mask) */
    int perturb_noise;       /* --perturb-noise: one ulp up in each item's initial noise (a twin) */
    int leak_check;          /* --leak-check: first run another case (every seed + 1) in this process */
    int no_images;           /* --no-images: the case's run without its decode (a fresh run whose images
                                no comparison reads: harness/sweep/runner.c, fresh_pair) */
    int rotate;              /* --rotate: the case's run in the rotated layout (rp_par_rotate; with
                                --teacher-force, the rotated self check's fresh repeat) */
    /* the classifier's runs made by the same launch after the case's own run (its outputs
       written first); each in its directory with aux.json (rp_cls_write_aux) */
    int then_twins;          /* --then-twins N: the rounding twins 0..N-1 (OUT/twins/<name>/, with the
                                teacher runs of those with other arithmetic) and the case's own
                                teacher run (OUT/teacher/): a reference's runs. N = 0: its teacher
                                run only (no case needs an envelope); -1: not a reference */
    int twins_apart;         /* --twins-apart: a reference's N twins run in a launch of their own
                                (--twins-of): this one runs the rest of --then-twins N's runs (its own
                                teacher run, its fp32 shadow's) as though they ran here */
    const char *twins_of;    /* --twins-of REF_DIR (with --then-twins N): the launch runs only the
                                twins of the reference in REF_DIR (this case, already run), teacher-
                                forced from its trajectory, into OUT/twins/<name>/ and, for a
                                precision with an fp32 shadow, OUT/shadow/twins/<name>/; no case run;
                                rank 0 writes OUT/done.json last */
    const char *then_teacher;/* --then-teacher REF_DIR: teacher forcing from REF_DIR into OUT/teacher/,
                                unless the case's trajectory is bitwise REF_DIR's */
    int then_invariant;      /* --then-invariant: the invariant shadow (rp_cls_invariant_shadow) teacher-
                                forced from OUT (a reference) or the --then-teacher REF_DIR into
                                OUT/invariant/teacher/ (and, for a bf16 case, at its own precision into
                                OUT/invariant/teacher-own/: rp_cls_invariant_shadow_own), unless the case's
                                trajectory is bitwise REF_DIR's */
    int then_shadow_decode;  /* --then-shadow-decode: a reference's fp32 shadow (OUT/shadow/teacher/) ends
                                with its own final latents decoded at fp32, for its cases' decoder
                                shadows (rp_cls_decode_shadow_ref) */
    int then_leak;           /* --then-leak: the leak check: the case's run is the launch's first call;
                                a later call recomputes steps from its input (for a case that differs
                                from its reference, every step from its own latents into OUT/self/:
                                the self check; for one bitwise its reference's, the first
                                RP_LEAK_CHECK_STEPS steps teacher-forced into OUT/teacher/; a
                                reference's own teacher run), whose bits must be the case's own
                                (rp_cls_rerun_check) */
} rp_job_case_opts;

/* Runs the case on this rank; returns a worker exit code (errors reported on stderr,
 * prefixed with the rank). */
int rp_job_case(const rp_rankenv *re, const rp_job_case_opts *o);

#endif
