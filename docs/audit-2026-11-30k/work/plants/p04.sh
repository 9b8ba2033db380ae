# 04 worker-eta-rank0-only: the worker builds each rank's request from the case, but a rank > 0 takes the sampler's
# default eta (DDIM: 0) instead of the case's (as if eta were sent to rank 0 only). Harness, rank-keyed (world rank
# > 0); the serial reference is rank 0.
. /work/main/docs/audit-2026-11-30k/work/plants/flags.sh
python3 $E harness/worker/job_case.c '    req.sampler = J->sk;
    req.n_items = J->count;' '    req.sampler = J->sk;
    if (J->par.rank > 0) req.eta = rp_sampler_default_eta(J->sk); /* AUDIT18-04 */
    req.n_items = J->count;'
