/* job_case.h — `repro worker --job case`: one rank of one case of a sweep.
 *
 *   repro worker --job case --case-file case.json --out-dir DIR [comm options]
 *
 * Every rank: loads the case (harness/case.h), validates it against the launched
 * world (harness/validate.h: a failure is exit 3, before any rank waits on another),
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
 *   env.json             harness/env.h
 *   done.json            last, atomically: the case id, layout, timings, item count
 * Exit codes: those of `repro worker` (harness/launch.h): 0 ok, 1 failed, 3 config
 * (invalid or unsupported case, item lists that do not verify), 4 a communication
 * timeout. */
#ifndef REPRO_JOB_CASE_H
#define REPRO_JOB_CASE_H

#include "backends/comm.h"
#include "harness/rankenv.h"

typedef struct rp_job_case_opts {
    const char *case_file;
    const char *out_dir;
    rp_comm_opts comm;  /* the worker's: rank, world, store, prefix, timeout...; the kind
                           is the case's backend */
    int backend_given;  /* the worker got --backend: it must name the case's backend */
} rp_job_case_opts;

/* Runs the case on this rank; returns a worker exit code (errors reported on stderr,
 * prefixed with the rank). */
int rp_job_case(const rp_rankenv *re, const rp_job_case_opts *o);

#endif
