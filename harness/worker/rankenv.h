/* rankenv.h — which rank of how many this process is, read from the launcher's
 * environment variables.
 *
 * Sources, in order of precedence (the first whose rank variable is set wins;
 * the others are not consulted, so a `repro launch` started inside a Slurm
 * allocation or under torchrun still uses its own numbering):
 *   repro     REPRO_RANK / REPRO_WORLD / REPRO_LOCAL_RANK        (repro launch)
 *   mpirun    OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK          (Open MPI)
 *   srun      SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID         (Slurm)
 *   torchrun  RANK / WORLD_SIZE / LOCAL_RANK                      (torch.distributed)
 * None set: a single process, rank 0 of 1. A world variable without its rank
 * variable is an error (a half-configured launch), except SLURM_NTASKS, which
 * an `salloc` shell exports before any srun step exists.
 *
 * Values must be plain decimal integers (no sign, blanks or suffix) with
 * 0 <= rank < world and 0 <= local rank < world; anything else is an error
 * naming the variable and its value, never a silent fallback. A missing local
 * rank defaults to the rank (right on one node, which is the only place our own
 * launcher runs). */
#ifndef REPRO_RANKENV_H
#define REPRO_RANKENV_H

#include "engine/error.h"

typedef enum rp_rank_source {
    RP_RANKSRC_NONE = 0, /* no launcher variables: rank 0 of 1 */
    RP_RANKSRC_REPRO,
    RP_RANKSRC_OMPI,
    RP_RANKSRC_SLURM,
    RP_RANKSRC_TORCHRUN
} rp_rank_source;

typedef struct rp_rankenv {
    int rank, world, local_rank;
    rp_rank_source source;
} rp_rankenv;

/* Detects from envp, a NULL-terminated "NAME=value" array (environ layout), so
 * tests need not touch the process environment. On error *out is left as
 * rank 0 of 1 and err names the offending variable. */
rp_status rp_rankenv_from(const char *const *envp, rp_rankenv *out, rp_error *err);

/* rp_rankenv_from(environ, ...). */
rp_status rp_rankenv_detect(rp_rankenv *out, rp_error *err);

/* "none" | "repro" | "mpirun" | "srun" | "torchrun" */
const char *rp_rank_source_name(rp_rank_source s);

#endif
