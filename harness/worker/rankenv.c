/* rankenv.c — rank/world detection; see rankenv.h for the rules. */
#include "harness/worker/rankenv.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* One launcher's variable names; local may be absent from the environment.
 * world_alone_ok: the world variable may appear without the rank one and then
 * means nothing — an `salloc -n 4` shell exports SLURM_NTASKS, and only the
 * steps srun starts get SLURM_PROCID. For the others a world without a rank is
 * a half-configured launch and an error. */
typedef struct source_vars {
    rp_rank_source source;
    const char *rank, *world, *local;
    int world_alone_ok;
} source_vars;

static const source_vars SOURCES[] = {
    {RP_RANKSRC_REPRO, "REPRO_RANK", "REPRO_WORLD", "REPRO_LOCAL_RANK", 0},
    {RP_RANKSRC_OMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", 0},
    {RP_RANKSRC_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", 1},
    {RP_RANKSRC_TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK", 0},
};

const char *rp_rank_source_name(rp_rank_source s) {
    switch (s) {
    case RP_RANKSRC_NONE: return "none";
    case RP_RANKSRC_REPRO: return "repro";
    case RP_RANKSRC_OMPI: return "mpirun";
    case RP_RANKSRC_SLURM: return "srun";
    case RP_RANKSRC_TORCHRUN: return "torchrun";
    }
    return "unknown";
}

/* Value of name in envp, or NULL. The first occurrence wins, as with getenv. */
static const char *lookup(const char *const *envp, const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* Parses a plain non-negative decimal int: digits only, so " 1", "+1", "1k"
 * and "" are rejected rather than read as something the launcher never meant. */
static rp_status parse_uint(const char *name, const char *v, int *out, rp_error *err) {
    if (!v[0]) return RP_FAIL(err, RP_ERR_INVALID, "%s is set but empty", name);
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9')
            return RP_FAIL(err, RP_ERR_INVALID, "%s='%s' is not a non-negative integer", name, v);
    errno = 0;
    long long x = strtoll(v, NULL, 10);
    if (errno == ERANGE || x > INT_MAX)
        return RP_FAIL(err, RP_ERR_INVALID, "%s='%s' is out of range", name, v);
    *out = (int)x;
    return RP_OK;
}

rp_status rp_rankenv_from(const char *const *envp, rp_rankenv *out, rp_error *err) {
    assert(out);
    *out = (rp_rankenv){.rank = 0, .world = 1, .local_rank = 0, .source = RP_RANKSRC_NONE};
    for (size_t i = 0; i < sizeof SOURCES / sizeof SOURCES[0]; i++) {
        const source_vars *s = &SOURCES[i];
        const char *rv = lookup(envp, s->rank), *wv = lookup(envp, s->world), *lv = lookup(envp, s->local);
        if (!rv) {
            if (wv && !s->world_alone_ok)
                return RP_FAIL(err, RP_ERR_INVALID, "%s is set but %s is not (%s launcher)", s->world,
                               s->rank, rp_rank_source_name(s->source));
            continue;
        }
        if (!wv)
            return RP_FAIL(err, RP_ERR_INVALID, "%s is set but %s is not (%s launcher)", s->rank, s->world,
                           rp_rank_source_name(s->source));
        int rank, world, local;
        RP_TRY(parse_uint(s->rank, rv, &rank, err));
        RP_TRY(parse_uint(s->world, wv, &world, err));
        if (world < 1) return RP_FAIL(err, RP_ERR_INVALID, "%s=%s: the world needs at least one rank", s->world, wv);
        if (rank >= world)
            return RP_FAIL(err, RP_ERR_INVALID, "%s=%d is not below %s=%d (ranks count from 0)", s->rank, rank,
                           s->world, world);
        local = rank;
        if (lv) {
            RP_TRY(parse_uint(s->local, lv, &local, err));
            if (local >= world)
                return RP_FAIL(err, RP_ERR_INVALID, "%s=%d is not below %s=%d", s->local, local, s->world, world);
        }
        *out = (rp_rankenv){.rank = rank, .world = world, .local_rank = local, .source = s->source};
        return RP_OK;
    }
    return RP_OK;
}

rp_status rp_rankenv_detect(rp_rankenv *out, rp_error *err) {
    return rp_rankenv_from((const char *const *)environ, out, err);
}
