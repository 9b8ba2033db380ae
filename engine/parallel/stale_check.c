/* stale_check.c — the staleness contract of the approximate strategies, checked exactly.
 *
 * PipeFusion and displaced patch parallelism (DistriFusion) approximate by design, but by
 * a precisely specified approximation: after warmup, attention `layer` of a forward reads,
 * for every patch other than the one in progress, the K/V rows computed for the same items
 * and layer at the evaluation the strategy's rule names — this evaluation (PipeFusion,
 * patches before the one in progress), or the previous one (the rest). Which bits those
 * are is known, so the rule is checked bitwise, not judged by an image bound: a stage that
 * reads its own patch stale or K/V two steps old, rows one token off, another item's K/V,
 * or fresh rows where stale ones are due, breaks it at the step it acts on (the audit of
 * 2026-11-29, round 6: all of these were `approx` before, some 22 dB worse than clean).
 *
 * The strategies fingerprint the rows when they are computed (with the evaluation, the
 * generation and the items they belong to) and again as they are placed into an
 * attention's keys, and hand both here (rp_par_stale_pair); a forward's checks fold into
 * one pair of the STALE group of the replica log (replica.c), compared at the run's end
 * like the own check's: no communication.
 *
 * The group holds the layouts' other exact contracts too, through the same pair: a
 * PipeFusion forward's block ownership (pipefusion.c, pf_owned_check) and the cfg
 * exchange's segments (cfg_par.c). */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "parallel.h"

int rp_par_stale_who(const rp_parallel *p) {
    if (!p->trace_rows || p->n_trace_rows < 1) return -1;
    return p->trace_rows[0] * 4096 + (p->n_trace_rows & 4095); /* the first row and the count */
}

void rp_par_stale_pair(rp_parallel *p, uint64_t got, uint64_t want, const char *name, const char *due) {
    if (p->st != RP_OK) return;
    const int differed = p->stale_held && p->stale_hash[0] != p->stale_hash[1];
    if (!differed && got != want) {
        snprintf(p->stale_what, sizeof p->stale_what, "%s", name);
        snprintf(p->stale_due, sizeof p->stale_due, "%s", due);
    }
    /* the own check's fold (replica.c): one-to-one in the held value, so a pair that
     * differed stays different and equal sequences fold equal */
    const uint64_t prime = 0x100000001b3ull;
    p->stale_hash[0] = p->stale_held ? (p->stale_hash[0] * prime) ^ got : got;
    p->stale_hash[1] = p->stale_held ? (p->stale_hash[1] * prime) ^ want : want;
    p->stale_held = 1;
}

void rp_par_stale_kv(rp_parallel *p, int layer, int patch, int due, uint64_t got, uint64_t want) {
    char name[RP_PAR_REPLICA_NAME], said[RP_PAR_REPLICA_NAME];
    snprintf(name, sizeof name, "kv.attn%d.patch%d", layer, patch);
    snprintf(said, sizeof said, "read at step %d: due, the rows computed at step %d for these items", p->fwd_eval, due);
    rp_par_stale_pair(p, got, want, name, said);
}

void rp_par_stale_text(rp_parallel *p, int layer, const float *K, const float *V, int To, const float *k,
                       const float *v, int Tk, int Tl, int Tr, size_t BH, int D, float *scratch) {
    assert(Tl >= 0 && Tr >= 0 && Tl + Tr <= To && Tl + Tr <= Tk);
    char name[RP_PAR_REPLICA_NAME], said[RP_PAR_REPLICA_NAME];
    snprintf(name, sizeof name, "kv.attn%d.text", layer);
    snprintf(said, sizeof said, "read at step %d: due, the text rows this forward computed", p->fwd_eval);
    const size_t so = (size_t)To * D, si = (size_t)Tk * D;
    if (Tl > 0)
        rp_par_stale_pair(p, rp_par_kv_print(K, V, BH, (size_t)Tl, (size_t)D, so, scratch),
                          rp_par_kv_print(k, v, BH, (size_t)Tl, (size_t)D, si, scratch), name, said);
    if (Tr > 0)
        rp_par_stale_pair(p,
                          rp_par_kv_print(K + (size_t)(To - Tr) * D, V + (size_t)(To - Tr) * D, BH, (size_t)Tr,
                                          (size_t)D, so, scratch),
                          rp_par_kv_print(k + (size_t)(Tk - Tr) * D, v + (size_t)(Tk - Tr) * D, BH, (size_t)Tr,
                                          (size_t)D, si, scratch),
                          name, said);
}

void rp_par_stale_async(rp_parallel *p) {
    if ((!p->pf && !p->pp) || p->fresh_kv) return;
    const int due = p->fwd_eval >= p->stale_from;
    char said[RP_PAR_REPLICA_NAME];
    snprintf(said, sizeof said, "step %d, warmup %d steps: due, the %s path", p->fwd_eval, p->stale_from,
             due ? "asynchronous (stale K/V)" : "synchronous (fresh K/V)");
    /* 0 is "nothing qualifies" for a pair: the two paths as 1 and 2 */
    rp_par_stale_pair(p, p->stale_seen ? 2 : 1, due ? 2 : 1, "async", said);
}

void rp_par_stale_flush(rp_parallel *p) {
    if (!p->stale_held) return;
    p->stale_held = 0;
    const int differed = p->stale_hash[0] != p->stale_hash[1];
    rp_par_log_pair(p, RP_PAR_RG_STALE, differed ? p->stale_what : "stale K/V", p->stale_hash[0],
                    differed ? p->stale_due : "the staleness contract", p->stale_hash[1]);
}

uint64_t rp_par_kv_print(const float *k, const float *v, size_t nbh, size_t rows, size_t D, size_t stride,
                         float *scratch) {
    const size_t piece = rows * D;
    for (size_t b = 0; b < nbh; b++) {
        memcpy(scratch + b * piece, k + b * stride, sizeof(float) * piece);
        memcpy(scratch + (nbh + b) * piece, v + b * stride, sizeof(float) * piece);
    }
    return rp_par_fingerprint(scratch, 2 * nbh * piece);
}
