/* verdict.h — the classifier's verdicts and the per-case classification.json.
 *
 * Exactly one verdict per case (names are part of the report schema):
 *   identical         bitwise equal to the reference
 *   drift             differences explained by rounding (every local error inside
 *                     the rounding envelope)
 *   approx            an approximate strategy (pipefusion/patch after warmup) whose exact
 *                     checks all held; below its declared quality bound it fails the
 *                     sweep ("pass": false), as a requirement, not as a fault
 *   BUG               the teacher run was fed other rows than the reference's, the run was
 *                     configured otherwise than case.json asks or an attention kernel other
 *                     than the one asked ran, an item's noise is not the draw
 *                     of its seed, the initial noise, a layer or a step breaks the envelope, or
 *                     (deterministic mode) a step recomputed after the case's run in its
 *                     worker gives other bits
 *   MISMATCH          item i matches reference item j != i (a permutation / wrong assignment)
 *   CONFIG_ERROR      validation rejected the case (or a rank exited 3), or its reference
 *                     poses another problem (rp_case_problem_diff)
 *   CRASH             a rank died (in the case's run or in one of the classifier's runs of it)
 *   HANG              the case hit its timeout (likewise)
 *   NONDETERMINISTIC  the same case on the same machine gave different bits (repeats; in
 *                     fast mode also the leak check's recomputed step)
 *   SKIPPED           the hardware is absent here
 * Precedence (harness/analysis/classify.h, rp_cls_decide): the run's failure, MISMATCH, BUG,
 * NONDETERMINISTIC, then identical / approx / drift.
 *
 * <case dir>/classification.json (schema 1; written by harness/analysis/classify.c, atomically).
 * Numbers that are not finite are the strings "inf", "-inf", "nan" (as metrics.json).
 * Members marked (opt) are absent when they do not apply; the rest are always there for
 * a case that ran to completion (a CONFIG_ERROR / CRASH / HANG case has an empty
 * "metrics" and its evidence holds "exactness" only).
 * {
 *   "schema": 1,
 *   "case_id": "...", "reference_id": "<id>" | "golden <dir>" | "?",
 *   "options_key": "twins=3 factor=64 ...",   the classify options it was made with
 *   "verdict": "<one of the names above>",
 *   "expected": "<the case's expect label, when it is a verdict name>" | null,
 *   "pass": true | false,    meets expected (identical meets drift; identical, drift meet
 *                            approx), or, with expected null, not a failing verdict
 *   "summary": "one line of evidence, e.g. 'blocks.3.attn breaks the envelope x812 at step 0'",
 *   "evidence": {
 *     "exactness": "exact" | "warmup-exact",
 *     "envelope": {                the rounding envelope of the reference's twins
 *       "factor": x, "floor": x,   a value is a bug beyond factor x max(envelope, floor)
 *       "twins": [{"name": s, "status": "ok" | verdict, "reason": s (opt), "teacher": bool}],
 *       "twins_ok": n,
 *       "reference_teacher": [x per step] (opt)  the reference's own teacher-forced error
 *       "layers": [{"name": s, "rel": x}],       first evaluation, execution order
 *       "steps": [x per step],                   teacher-forced local error
 *       "accumulated": [x per trajectory row]    free trajectory (row 0 = initial noise)
 *     },
 *     "layers": [{"name": s, "rel": x, "envelope": x, "ratio": x}],   the case's first evaluation
 *     "layers_note": s (opt),      why layers could not be compared
 *     "accumulated": [x per row],  the case's free-trajectory distance (max over items)
 *     "initial_noise": {"rule": "bitwise" | "envelope", "read": "the returned noise" |
 *                       "the trajectory's first row", "rel": x, "envelope": x, "ratio": x,
 *                       "trajectory_start": "the noise" | s (the break) (opt),
 *                       "drawn_here": "within one ulp" | "differs" (opt: the returned noise
 *                       against rp_randn of case.json's seeds, drawn by the classifier)},
 *     "attention_kernels": "flash (q=128 kv=40), ..." (opt)  the kernels the trace says ran
 *                                  bitwise against a reference made here (ratio 0 or inf)
 *     "final_latents": {"last_step_state": bool, "assignment": s (opt), "break": s (opt)}
 *                      | {"note": s}  the returned latents against the trajectory's last row
 *     "local_errors": [x | null per step] (opt),  teacher-forced; null: step not run
 *     "checked_steps": [k, ...] (opt),            steps held to the envelope (approx: warmup)
 *     "teacher_note": s (opt),     no teacher run: local errors not checked
 *     "emulation": {"num_pipeline_patch": M, "bitwise": bool, "first_difference": k,
 *                   "what": "trajectory" | "initial noise" | "returned latents" | "decoded images",
 *                   "rel": x} | {"note": s, "reason": s} (opt, a staged PipeFusion case: its
 *                   own run against its serial emulation, harness/analysis/classify.h),
 *     "first_step": {"step": k, "what": "teacher input" | "configuration" | "attention kernel" |
 *                            "replica" |
 *                            "initial noise" | "trajectory" |
 *                            "first evaluation" | "invariant shadow" | "emulation" | "local error" |
 *                            "decode" | "final latents" | "leak check" | "leak check (fp32 shadow)",
 *                    "detail": s, "host_computed": bool (replica),
 *                    "local": x, "envelope": x, "ratio": x} (opt, BUG),
 *     "first_layer": {"name": s, "step": k, "rel": x, "envelope": x, "ratio": x} (opt),
 *     "assignment": {"permutation": [j per item], "distances": [[x per ref item] per item],
 *                    "margin": x, "message": "item 2 matches reference item 0"} (opt, >= 2 items),
 *     "approx": {"ssim": x, "psnr": x, "bound_ssim": x, "bound_psnr": x, "warmup": k,
 *                "approximate": bool} (opt, warmup-exact layouts),
 *     "determinism": {"repeats": n, "promised": bool, "max_abs": x, "repeats_identical": bool,
 *                     "leak_check": "ok" | "differs (max-abs x)" | "not run",
 *                     "leak_check_fp32_shadow": "ok" | "differs ..." (opt, coarser precisions),
 *                     "fresh_rerun": s (opt), "fresh_rerun_fp32": s (opt)}
 *   },
 *   "metrics": {"latents": {"max_abs", "mean_abs", "rel_l2", "cosine", "bitwise_equal"},
 *               "images": [{"index": i, "psnr": x, "ssim": x, "max_abs": k, "changed": x,
 *               "changed8": x}], "steps": [rel_l2 per trajectory row]}
 * }
 * With --golden the same schema is written to classification-golden.json, the golden as
 * the reference. */
#ifndef REPRO_VERDICT_H
#define REPRO_VERDICT_H

typedef enum rp_verdict {
    RP_V_IDENTICAL = 0,
    RP_V_DRIFT,
    RP_V_APPROX,
    RP_V_BUG,
    RP_V_MISMATCH,
    RP_V_CONFIG_ERROR,
    RP_V_CRASH,
    RP_V_HANG,
    RP_V_NONDETERMINISTIC,
    RP_V_SKIPPED,
    RP_V_COUNT
} rp_verdict;

/* The exact names above. */
const char *rp_verdict_name(rp_verdict v);
/* Parses a name (case-sensitive, as written above); -1 if unknown. */
int rp_verdict_parse(const char *s);
/* Failing verdicts make a run exit non-zero unless expected: BUG, MISMATCH,
 * NONDETERMINISTIC (when determinism was promised), CRASH, HANG, CONFIG_ERROR. */
int rp_verdict_fails(rp_verdict v, int determinism_promised);

#endif
