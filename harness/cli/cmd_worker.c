/* cmd_worker.c — `repro worker`: one rank of a multi-process job.
 *
 * Started by `repro launch` (REPRO_*), mpirun (OMPI_*), srun (SLURM_*) or
 * torchrun (RANK/WORLD_SIZE): it reads its rank and world from the environment
 * (harness/worker/rankenv.h), creates the communicator when the job needs one, runs
 * the job and exits with a code the launcher can classify (enum rp_worker_exit
 * in backends/launch.h): 0 ok, 1 failed, 2 usage, 3 configuration,
 * 4 communication timeout (a peer died or never joined).
 *
 * The jobs here test the launch and communication plumbing itself, except
 * `case`, which runs one case of a matrix under its parallel strategy
 * (harness/worker/job_case.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/comm.h"
#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/analysis/classify.h"
#include "harness/worker/job_case.h"
#include "backends/launch.h"
#include "harness/worker/rankenv.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro worker --job JOB [--store-dir DIR | --redis HOST[:PORT]] [--backend self|gloo|nccl]\n"
            "                    [--timeout S] [job options]\n"
            "\n"
            "Runs one rank. Rank and world come from the environment: REPRO_RANK/REPRO_WORLD\n"
            "(repro launch), OMPI_COMM_WORLD_RANK/SIZE (mpirun), SLURM_PROCID/SLURM_NTASKS (srun),\n"
            "RANK/WORLD_SIZE (torchrun), in that order; none: rank 0 of 1.\n"
            "\n"
            "jobs:\n"
            "  comm-selftest  allreduce (sum, max), allgather, broadcast from every root and a\n"
            "                 barrier with exactly predictable results; prints \"rank R/W ok\"\n"
            "  sleep          sleep --seconds S, then exit 0 (hang tests)\n"
            "  crash          rank --crash-rank raises --signal after --seconds S (crash tests)\n"
            "  exit           rank --crash-rank exits with --code N after --seconds S\n"
            "  deadlock       every rank receives from the next rank before sending to it, so all\n"
            "                 wait (the launcher's deadlock watch); rank --crash-rank first\n"
            "                 computes (sleeps) --seconds S outside any call\n"
            "  case           run one case: --case-file case.json --out-dir DIR (the case's backend;\n"
            "                 rank 0 writes latents.safetensors, image-<i>.png, trace.safetensors,\n"
            "                 env.json and done.json last); the classifier's runs of a case:\n"
            "                 --teacher-force REF_DIR [--teacher-steps N], --perturb-noise, --rotate,\n"
            "                 --leak-check, --no-images; after the case in the same launch:\n"
            "                 --then-twins N, --then-teacher REF_DIR, --then-invariant, --then-leak,\n"
            "                 --then-shadow-decode, --twins-apart; a reference's twins alone:\n"
            "                 --twins-of REF_DIR --then-twins N\n"
            "                 (harness/worker/job_case.h)\n"
            "\n"
            "communication (comm-selftest always; other jobs when --backend is given):\n"
            "  --backend B        self | gloo | nccl (default: self for one rank, else gloo)\n"
            "  --store-dir DIR    rendezvous directory shared by all ranks (default $REPRO_STORE_DIR)\n"
            "  --redis HOST[:PORT] rendezvous through a Redis server instead (port default 6379)\n"
            "  --prefix P         namespace inside the store (default \"worker\")\n"
            "  --iface IF / --hostname H   network interface / address for the TCP transport\n"
            "                     (neither given: $GLOO_SOCKET_IFNAME when set, else the address\n"
            "                     the host name resolves to)\n"
            "  --timeout S        rendezvous and per-collective timeout (default 60)\n"
            "  --late-rank R --late S      rank R sleeps S seconds before joining (rendezvous tests)\n"
            "\n"
            "job options:\n"
            "  --seconds S        sleep: duration (default 3600); crash/exit: delay before (default 0)\n"
            "  --crash-rank R     the rank that crashes or exits, -1 for all (default 0)\n"
            "  --signal SIG       crash: KILL | SEGV | ABRT | any name or number (default KILL)\n"
            "  --code N           exit: the exit code (default 1)\n"
            "  --others-seconds S crash/exit: the other ranks sleep this long, then exit 0\n"
            "                     (default 3600: until the launcher kills them); with a\n"
            "                     communicator they wait in a barrier instead\n"
            "  --tag STR          ignored; marks the processes for ps/pgrep\n"
            "\n"
            "exit codes: 0 ok, 1 failed, 2 usage, 3 configuration, 4 communication timeout\n");
}

typedef enum worker_job { JOB_SELFTEST, JOB_SLEEP, JOB_CRASH, JOB_EXIT, JOB_DEADLOCK, JOB_CASE } worker_job;

typedef struct worker_opts {
    worker_job job;
    int use_comm;
    rp_comm_opts comm;
    char redis_host[256];
    int late_rank;
    double late_s;
    double seconds, others_seconds;
    int crash_rank, crash_signal, exit_code;
    const char *case_file, *out_dir; /* job case */
    const char *teacher_ref;         /* job case, the classifier's runs (job_case.h) */
    int teacher_steps, perturb_noise, leak_check, no_images, rotate;
    int then_twins, then_invariant, then_leak, then_shadow_decode; /* job case: the classifier's runs in the same launch */
    int twins_apart;
    const char *twins_of;
    const char *then_teacher;
    int backend_given;               /* --backend was given */
} worker_opts;

/* Sleeps s seconds, resuming after signals that do not kill us. */
static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* Reports err prefixed with this rank (the lines of several ranks interleave
 * under mpirun and srun) and returns code. */
static int fail(const rp_rankenv *re, const rp_error *err, int code) {
    rp_error e = *err;
    snprintf(e.msg, sizeof e.msg, "worker rank %d/%d: %.990s", re->rank, re->world, err->msg);
    rp_report_error(&e);
    return code;
}

/* ---- comm-selftest: every expected value is computed locally --------------- */

static rp_status check_floats(const char *what, const float *got, const float *want, size_t n, rp_error *err) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return RP_FAIL(err, RP_ERR_COMM, "%s: element %zu is %.9g, expected %.9g", what, i, (double)got[i],
                           (double)want[i]);
    return RP_OK;
}

/* Values are small integers, so every sum is exact in float and the expected
 * result does not depend on the reduction order the backend picks. */
static rp_status selftest(rp_comm *c, rp_error *err) {
    const int R = c->rank, W = c->world;
    enum { N_RED = 100003, N_GATHER = 257, N_BCAST = 1000 };
    float *buf = malloc(N_RED * sizeof *buf), *want = malloc(N_RED * sizeof *want);
    float *gather = malloc((size_t)W * N_GATHER * sizeof *gather);
    float *gwant = malloc((size_t)W * N_GATHER * sizeof *gwant);
    unsigned char *bytes = malloc(N_BCAST + 3 * (size_t)W);
    rp_status st = (buf && want && gather && gwant && bytes) ? RP_OK
                                                          : RP_FAIL(err, RP_ERR_NOMEM, "selftest: out of memory");
    /* allreduce sum: rank r holds (r+1)*(i%1000+1); the sum is (i%1000+1)*W(W+1)/2 */
    if (st == RP_OK) {
        for (size_t i = 0; i < N_RED; i++) {
            buf[i] = (float)((R + 1) * (int)(i % 1000 + 1));
            want[i] = (float)((int)(i % 1000 + 1) * W * (W + 1) / 2);
        }
        st = c->ops->allreduce(c, buf, N_RED, RP_REDUCE_SUM, err);
        if (st == RP_OK) st = check_floats("allreduce sum", buf, want, N_RED, err);
    }
    /* allreduce max: rank r holds (7r+i)%13 */
    if (st == RP_OK) {
        for (size_t i = 0; i < N_RED; i++) {
            buf[i] = (float)((7 * R + (int)(i % 13)) % 13);
            int m = 0;
            for (int r = 0; r < W; r++) m = (7 * r + (int)(i % 13)) % 13 > m ? (7 * r + (int)(i % 13)) % 13 : m;
            want[i] = (float)m;
        }
        st = c->ops->allreduce(c, buf, N_RED, RP_REDUCE_MAX, err);
        if (st == RP_OK) st = check_floats("allreduce max", buf, want, N_RED, err);
    }
    /* allgather: rank r sends r*1000+i; block r of the result must be exactly that */
    if (st == RP_OK) {
        for (int i = 0; i < N_GATHER; i++) buf[i] = (float)(R * 1000 + i);
        for (int r = 0; r < W; r++)
            for (int i = 0; i < N_GATHER; i++) gwant[(size_t)r * N_GATHER + i] = (float)(r * 1000 + i);
        st = c->ops->allgather(c, buf, N_GATHER, gather, err);
        if (st == RP_OK) st = check_floats("allgather", gather, gwant, (size_t)W * N_GATHER, err);
    }
    /* broadcast from every root, with a different length per root */
    for (int root = 0; st == RP_OK && root < W; root++) {
        size_t n = N_BCAST + 3 * (size_t)root;
        for (size_t i = 0; i < n; i++) bytes[i] = R == root ? (unsigned char)(root * 31 + i * 7) : 0;
        st = c->ops->broadcast(c, bytes, n, root, err);
        for (size_t i = 0; st == RP_OK && i < n; i++)
            if (bytes[i] != (unsigned char)(root * 31 + i * 7))
                st = RP_FAIL(err, RP_ERR_COMM, "broadcast from root %d: byte %zu is %u, expected %u", root, i,
                             bytes[i], (unsigned)(unsigned char)(root * 31 + i * 7));
    }
    if (st == RP_OK) st = c->ops->barrier(c, err);
    free(buf);
    free(want);
    free(gather);
    free(gwant);
    free(bytes);
    return st;
}

/* ---- option parsing -------------------------------------------------------- */

/* Fills *o from the command line and the rank environment. Returns a worker
 * exit code: 0 to go on, else usage (2) or configuration (3), already reported. */
static int parse(int argc, char **argv, const rp_rankenv *re, worker_opts *o) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    const char *job = rp_arg_str(&a, "job", NULL);
    const char *backend = rp_arg_str(&a, "backend", NULL);
    const char *store_dir = rp_arg_str(&a, "store-dir", NULL);
    const char *redis = rp_arg_str(&a, "redis", NULL);
    o->comm.prefix = rp_arg_str(&a, "prefix", "worker");
    o->comm.iface = rp_arg_str(&a, "iface", NULL);
    o->comm.hostname = rp_arg_str(&a, "hostname", NULL);
    /* the interface set for a whole job by its launcher (torch.distributed's name for it:
     * a sweep's --launcher srun / mpirun passes it to every rank on every node) */
    const char *env_iface = getenv("GLOO_SOCKET_IFNAME");
    if (!o->comm.iface && !o->comm.hostname && env_iface && *env_iface) o->comm.iface = env_iface;
    o->comm.timeout_s = rp_arg_double(&a, "timeout", 60.0);
    o->comm.state_dir = getenv("REPRO_COMM_STATE_DIR"); /* the local launcher's deadlock watch */
    o->late_rank = (int)rp_arg_int(&a, "late-rank", -1);
    o->late_s = rp_arg_double(&a, "late", 0.0);
    const char *seconds = rp_arg_str(&a, "seconds", NULL);
    o->seconds = rp_arg_double(&a, "seconds", 0.0);
    o->others_seconds = rp_arg_double(&a, "others-seconds", 3600.0);
    o->crash_rank = (int)rp_arg_int(&a, "crash-rank", 0);
    const char *sig = rp_arg_str(&a, "signal", "KILL");
    o->exit_code = (int)rp_arg_int(&a, "code", 1);
    (void)rp_arg_str(&a, "tag", NULL);
    o->case_file = rp_arg_str(&a, "case-file", NULL);
    o->out_dir = rp_arg_str(&a, "out-dir", NULL);
    o->teacher_ref = rp_arg_str(&a, "teacher-force", NULL);
    o->teacher_steps = (int)rp_arg_int(&a, "teacher-steps", 0);
    o->perturb_noise = rp_arg_flag(&a, "perturb-noise");
    o->leak_check = rp_arg_flag(&a, "leak-check");
    o->no_images = rp_arg_flag(&a, "no-images");
    o->rotate = rp_arg_flag(&a, "rotate");
    o->then_twins = (int)rp_arg_int(&a, "then-twins", -1);
    o->then_teacher = rp_arg_str(&a, "then-teacher", NULL);
    o->then_invariant = rp_arg_flag(&a, "then-invariant");
    o->then_leak = rp_arg_flag(&a, "then-leak");
    o->then_shadow_decode = rp_arg_flag(&a, "then-shadow-decode");
    o->twins_apart = rp_arg_flag(&a, "twins-apart");
    o->twins_of = rp_arg_str(&a, "twins-of", NULL);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) return fail(re, &err, RP_WORKER_EXIT_USAGE);
    if (o->then_twins < -1 || o->then_twins > RP_CLS_MAX_TWINS) {
        RP_FAIL(&err, RP_ERR_INVALID, "--then-twins %d: must be 0..%d", o->then_twins, RP_CLS_MAX_TWINS);
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (o->twins_of && o->then_twins <= 0) {
        RP_FAIL(&err, RP_ERR_INVALID, "--twins-of %s needs --then-twins N (N >= 1: how many twins)", o->twins_of);
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }

    if (!job) {
        RP_FAIL(&err, RP_ERR_INVALID, "--job is required (comm-selftest, sleep, crash, exit)");
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (!strcmp(job, "comm-selftest")) o->job = JOB_SELFTEST;
    else if (!strcmp(job, "sleep")) o->job = JOB_SLEEP;
    else if (!strcmp(job, "crash")) o->job = JOB_CRASH;
    else if (!strcmp(job, "exit")) o->job = JOB_EXIT;
    else if (!strcmp(job, "deadlock")) o->job = JOB_DEADLOCK;
    else if (!strcmp(job, "case")) o->job = JOB_CASE;
    else {
        RP_FAIL(&err, RP_ERR_INVALID, "unknown job '%s' (comm-selftest, sleep, crash, exit, case)", job);
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (o->job == JOB_SLEEP && !seconds) o->seconds = 3600.0;
    if (o->job == JOB_CASE && (!o->case_file || !o->out_dir)) {
        RP_FAIL(&err, RP_ERR_INVALID, "--job case needs --case-file case.json and --out-dir DIR");
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (o->seconds < 0 || o->others_seconds < 0 || o->late_s < 0 || !(o->comm.timeout_s > 0)) {
        RP_FAIL(&err, RP_ERR_INVALID, "--seconds, --others-seconds and --late must be >= 0, --timeout > 0");
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (o->crash_rank < -1 || o->late_rank < -1) {
        RP_FAIL(&err, RP_ERR_INVALID, "--crash-rank and --late-rank take a rank, or -1 for all ranks");
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (o->exit_code < 0 || o->exit_code > 255) {
        RP_FAIL(&err, RP_ERR_INVALID, "--code %d: exit codes are 0..255", o->exit_code);
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (rp_signal_parse(sig, &o->crash_signal, &err) != RP_OK) return fail(re, &err, RP_WORKER_EXIT_USAGE);

    /* Ranks beyond the world would silently never crash: a config error. */
    if (o->crash_rank >= re->world && (o->job == JOB_CRASH || o->job == JOB_EXIT)) {
        RP_FAIL(&err, RP_ERR_INVALID, "--crash-rank %d is not a rank of a world of %d", o->crash_rank, re->world);
        return fail(re, &err, RP_WORKER_EXIT_CONFIG);
    }

    o->use_comm = o->job == JOB_SELFTEST || o->job == JOB_CASE || o->job == JOB_DEADLOCK || backend != NULL;
    o->comm.rank = re->rank;
    o->comm.world = re->world;
    o->comm.cuda_device = re->local_rank;
    o->comm.mem = RP_MEM_HOST;
    o->comm.kind = re->world == 1 ? RP_COMM_SELF : RP_COMM_GLOO;
    if (!o->use_comm) return 0;
    if (backend && rp_comm_kind_parse(backend, &o->comm.kind, &err) != RP_OK)
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    o->backend_given = backend != NULL;
    if (!rp_comm_available(o->comm.kind)) {
        RP_FAIL(&err, RP_ERR_UNSUPPORTED, "backend %s is not compiled into this build",
                rp_comm_kind_name(o->comm.kind));
        return fail(re, &err, RP_WORKER_EXIT_CONFIG);
    }
    if (store_dir && redis) {
        RP_FAIL(&err, RP_ERR_INVALID, "give one rendezvous store: --store-dir or --redis, not both");
        return fail(re, &err, RP_WORKER_EXIT_USAGE);
    }
    if (redis) {
        snprintf(o->redis_host, sizeof o->redis_host, "%s", redis);
        o->comm.redis_port = 6379;
        char *colon = strrchr(o->redis_host, ':');
        if (colon) {
            char *end;
            long port = strtol(colon + 1, &end, 10);
            if (colon[1] == '\0' || *end || port < 1 || port > 65535) {
                RP_FAIL(&err, RP_ERR_INVALID, "--redis %s: the port must be 1..65535", redis);
                return fail(re, &err, RP_WORKER_EXIT_USAGE);
            }
            *colon = '\0';
            o->comm.redis_port = (int)port;
        }
        o->comm.redis_host = o->redis_host;
    } else {
        o->comm.store_dir = store_dir ? store_dir : getenv("REPRO_STORE_DIR");
        if ((!o->comm.store_dir || !*o->comm.store_dir) && o->comm.kind != RP_COMM_SELF) {
            RP_FAIL(&err, RP_ERR_INVALID, "no rendezvous store: give --store-dir DIR (a directory all %d ranks "
                                          "share), --redis HOST:PORT, or run under repro launch",
                    re->world);
            return fail(re, &err, RP_WORKER_EXIT_CONFIG);
        }
    }
    return 0;
}

/* ---- the command ----------------------------------------------------------- */

/* crash / exit on the chosen rank(s); the others sleep, or wait in a barrier
 * when there is a communicator (they then fail with the comm layer's error or
 * timeout once the crashed rank is gone, unless the launcher kills them first). */
static int run_fault(const worker_opts *o, const rp_rankenv *re, rp_comm *c) {
    if (o->crash_rank == -1 || o->crash_rank == re->rank) {
        sleep_s(o->seconds);
        if (o->job == JOB_EXIT) {
            fprintf(stderr, "worker rank %d/%d: exiting with code %d as asked\n", re->rank, re->world, o->exit_code);
            return o->exit_code;
        }
        char sb[32];
        fprintf(stderr, "worker rank %d/%d: raising %s as asked\n", re->rank, re->world,
                rp_signal_name(o->crash_signal, sb, sizeof sb));
        fflush(stderr);
        signal(o->crash_signal, SIG_DFL); /* a handler or ignore inherited for it must not save us */
        raise(o->crash_signal);
        /* Signals whose default action is not to terminate (CHLD, CONT...) land here. */
        fprintf(stderr, "worker rank %d/%d: still alive after %s\n", re->rank, re->world, sb);
        return RP_WORKER_EXIT_FAIL;
    }
    if (c) {
        rp_error err;
        rp_error_clear(&err);
        rp_status st = c->ops->barrier(c, &err);
        return st == RP_OK ? 0 : fail(re, &err, rp_worker_exit_code(st));
    }
    fprintf(stderr, "worker rank %d/%d: waiting %.1f s while rank %d fails\n", re->rank, re->world,
            o->others_seconds, o->crash_rank);
    fflush(stderr);
    sleep_s(o->others_seconds);
    return 0;
}

/* Receives from the next rank, then would send to it: every rank waits in its recv until
 * the communicator's timeout, unless the launcher sees the deadlock first. */
static int run_deadlock(const worker_opts *o, const rp_rankenv *re, rp_comm *c) {
    if (o->crash_rank == -1 || o->crash_rank == re->rank) sleep_s(o->seconds);
    if (c->world < 2) return 0;
    const int next = (c->rank + 1) % c->world;
    uint32_t v = (uint32_t)c->rank;
    rp_error err;
    rp_error_clear(&err);
    rp_status st = c->ops->recv(c, &v, sizeof v, next, 0, &err);
    if (st == RP_OK) st = c->ops->send(c, &v, sizeof v, next, 0, &err);
    return st == RP_OK ? 0 : fail(re, &err, rp_worker_exit_code(st));
}

int rp_cmd_worker(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
    rp_rankenv re;
    rp_error err;
    rp_error_clear(&err);
    if (rp_rankenv_detect(&re, &err) != RP_OK) {
        rp_report_error(&err);
        return RP_WORKER_EXIT_CONFIG;
    }
    worker_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &re, &o);
    if (rc) return rc;

    if ((o.late_rank == -1 || o.late_rank == re.rank) && o.late_s > 0) {
        fprintf(stderr, "worker rank %d/%d: joining %.1f s late as asked\n", re.rank, re.world, o.late_s);
        fflush(stderr);
        sleep_s(o.late_s);
    }
    if (o.job == JOB_CASE) { /* creates its communicator itself, once the case is validated */
        const rp_job_case_opts jo = {.case_file = o.case_file, .out_dir = o.out_dir, .comm = o.comm,
                                     .backend_given = o.backend_given, .teacher_ref = o.teacher_ref,
                                     .teacher_steps = o.teacher_steps, .perturb_noise = o.perturb_noise,
                                     .leak_check = o.leak_check, .no_images = o.no_images, .rotate = o.rotate, .then_twins = o.then_twins,
                                     .then_teacher = o.then_teacher, .then_invariant = o.then_invariant,
                                     .then_leak = o.then_leak, .then_shadow_decode = o.then_shadow_decode,
                                     .twins_apart = o.twins_apart, .twins_of = o.twins_of};
        return rp_job_case(&re, &jo);
    }
    rp_comm *c = NULL;
    if (o.use_comm) {
        rp_status st = rp_comm_create(&o.comm, &c, &err);
        if (st != RP_OK) return fail(&re, &err, rp_worker_exit_code(st));
    }
    switch (o.job) {
    case JOB_SELFTEST: {
        rp_status st = selftest(c, &err);
        if (st != RP_OK) {
            rc = fail(&re, &err, rp_worker_exit_code(st));
            break;
        }
        printf("rank %d/%d ok (%s, %s)\n", re.rank, re.world, c->ops->name, rp_rank_source_name(re.source));
        fflush(stdout);
        rc = 0;
        break;
    }
    case JOB_SLEEP:
        /* Said on stderr so a hang report shows where each rank was. */
        fprintf(stderr, "worker rank %d/%d: sleeping %.1f s\n", re.rank, re.world, o.seconds);
        fflush(stderr);
        sleep_s(o.seconds);
        rc = 0;
        break;
    case JOB_CRASH:
    case JOB_EXIT:
        rc = run_fault(&o, &re, c);
        break;
    case JOB_DEADLOCK:
        rc = run_deadlock(&o, &re, c);
        break;
    case JOB_CASE:
        break; /* handled above */
    }
    if (c) rp_comm_destroy(c);
    return rc;
}
