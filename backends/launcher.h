/* launcher.h — how the ranks of a job get started: one small interface, three
 * implementations (in the spirit of ggml's backends: a struct of function pointers).
 *
 *   local   fork + exec on this machine (backends/launch.c, rp_launch)
 *   srun    one Slurm job step per job, inside the allocation the sweep runs in
 *           (SLURM_JOB_ID set): srun -N <nodes> -n <world> --ntasks-per-node <k>
 *           -m block -w <nodes picked> --kill-on-bad-exit=1 (backends/launch_srun.c)
 *   mpirun  one Open MPI mpirun per job on hosts from a hostfile:
 *           mpirun -n <world> -H a:k,b:k --map-by slot (backends/launch_mpirun.c)
 *
 * Every launcher takes the same rp_launch_spec and fills the same
 * rp_launch_result (backends/launch.h), so the runner neither knows nor cares
 * which one ran a case: the ranks' outputs are <run dir>/rank<r>.out/.err, the
 * rendezvous is a Gloo FileStore in <run dir>/rendezvous-XXXXXX (REPRO_STORE_DIR),
 * which for srun and mpirun must be on a file system every node sees (the results
 * directory), and the outcome is ok / crash / config-error / comm-timeout / hang /
 * cancelled with the first failed rank and, for srun and mpirun, its node
 * (rp_rank_result.node). Ranks of a cluster launch read their rank from the
 * launcher's variables (SLURM_PROCID, OMPI_COMM_WORLD_RANK: harness/rankenv.h);
 * REPRO_RANK / REPRO_WORLD / REPRO_LOCAL_RANK are removed from their environment.
 *
 * Placement: a cluster launcher owns a pool of named nodes (the allocation's
 * SLURM_JOB_NODELIST, or the hostfile's hosts). A job of spec->nodes nodes gets
 * that many free ones for its lifetime and rank r runs on the (r / k)-th of them,
 * k = ceil(world / nodes), so a failing rank's node is known even when the
 * launcher's own message does not name it. A launch finding too few free nodes
 * is an error (the runner never starts more than rp_launcher.nodes hold).
 *
 * Thread-safe: launch() may run from several threads at once (one per case). */
#ifndef REPRO_LAUNCHER_H
#define REPRO_LAUNCHER_H

#include "engine/error.h"
#include "backends/launch.h"

#define RP_LAUNCHER_MAX_NODES 256
#define RP_LAUNCHER_NODE_NAME 64

typedef enum rp_launcher_kind { RP_LAUNCHER_LOCAL = 0, RP_LAUNCHER_SRUN, RP_LAUNCHER_MPIRUN } rp_launcher_kind;

typedef struct rp_launcher_opts {
    rp_launcher_kind kind;
    const char *hostfile;   /* mpirun: required; one host per line ("host [slots=N]", # comments) */
    const char *program;    /* the srun / mpirun binary; NULL: found on PATH */
} rp_launcher_opts;

typedef struct rp_launcher rp_launcher;
struct rp_launcher {
    const char *name;       /* "local" | "srun" | "mpirun" */
    rp_launcher_kind kind;
    int nodes;              /* nodes jobs may be placed on (local: 1) */
    /* Runs one job to completion, as rp_launch (backends/launch.h) does: RP_OK when it
     * ran, whatever its outcome (res->status); an error when the launcher itself
     * could not start it or lost it (srun refused the step, mpirun died without a
     * rank failing): the runner records no result then (INFRA_ERROR). */
    rp_status (*launch)(rp_launcher *l, const rp_launch_spec *spec, rp_launch_result *res, rp_error *err);
    void (*close)(rp_launcher *l);
    void *impl;
};

/* Opens the launcher o->kind names: for srun, checks that this process is inside an
 * allocation (SLURM_JOB_ID), finds srun, scancel and squeue, and reads the
 * allocation's node names (scontrol show hostnames); for mpirun, reads the hostfile
 * and finds mpirun. Errors name the missing variable, option, file or binary.
 * *out is freed with rp_launcher_close. */
rp_status rp_launcher_open(const rp_launcher_opts *o, rp_launcher **out, rp_error *err);

void rp_launcher_close(rp_launcher *l);

/* "local" -> RP_LAUNCHER_LOCAL etc.; an unknown name is RP_ERR_INVALID naming the choices. */
rp_status rp_launcher_parse(const char *name, rp_launcher_kind *kind, rp_error *err);

const char *rp_launcher_kind_name(rp_launcher_kind k);

/* The local launcher (rp_launch behind the interface); never fails but for memory. */
rp_status rp_launcher_local(rp_launcher **out, rp_error *err);

#endif
