/* verdict.h — the classifier's verdicts and the per-case classification.json.
 *
 * Exactly one verdict per case (names are part of the report schema):
 *   identical         bitwise equal to the reference
 *   drift             differences explained by rounding (every local error inside
 *                     the rounding envelope)
 *   approx            an approximate strategy (pipefusion/patch after warmup) within
 *                     its declared quality bound
 *   BUG               a layer or a step breaks the envelope (or approx below its bound)
 *   MISMATCH          outputs are a permutation / wrong assignment of the reference's
 *   CONFIG_ERROR      validation rejected the case
 *   CRASH             a rank died
 *   HANG              the case hit its timeout
 *   NONDETERMINISTIC  the same case on the same machine gave different bits
 *   SKIPPED           the hardware is absent here
 *
 * <case dir>/classification.json (schema 1):
 * {
 *   "schema": 1,
 *   "case_id": "...", "reference_id": "..." | null,
 *   "verdict": "<one of the names above>",
 *   "expected": "<verdict the matrix expects>" | null,
 *   "pass": true | false,            verdict acceptable (expected, or a non-failing one)
 *   "summary": "one line of evidence, e.g. 'blocks.3.attn breaks the envelope x812 at step 0'",
 *   "evidence": {                    every member optional
 *     "envelope":   {"layers": [{"name": s, "rel": x}], "steps": [x, ...]},
 *     "first_layer": {"name": s, "rel": x, "envelope": x, "ratio": x},
 *     "first_step":  {"step": k, "local": x, "envelope": x, "ratio": x},
 *     "local_errors": [x per step], "accumulated": [x per step],
 *     "approx": {"ssim": x, "psnr": x, "bound_ssim": x, "bound_psnr": x, "warmup": k},
 *     "assignment": {"permutation": [j per item], "message": "item 0 matches prompt 2"},
 *     "determinism": {"repeats": n, "max_abs": x, "leak_check": "ok" | "..."},
 *     "attention_auto": "subquad (reason ...)"
 *   },
 *   "metrics": {"latents": {...}, "images": [{"psnr": x, "ssim": x, "max_abs": k,
 *               "changed": x, "changed8": x}], "steps": [rel_l2 per step]}
 * } */
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
