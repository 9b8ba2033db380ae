/* launcher.c — the launcher interface (launcher.h): choosing one by name, and the
 * local launcher (backends/launch.c's rp_launch) behind it. */
#include "backends/launcher.h"

#include <stdlib.h>
#include <string.h>

#include "backends/launch_cluster.h"

static const char *const NAMES[] = {"local", "srun", "mpirun"};

const char *rp_launcher_kind_name(rp_launcher_kind k) {
    return (unsigned)k < sizeof NAMES / sizeof NAMES[0] ? NAMES[k] : "unknown";
}

rp_status rp_launcher_parse(const char *name, rp_launcher_kind *kind, rp_error *err) {
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (!strcmp(name, NAMES[i])) {
            *kind = (rp_launcher_kind)i;
            return RP_OK;
        }
    return RP_FAIL(err, RP_ERR_INVALID, "launcher '%s': local, srun or mpirun", name);
}

static rp_status local_launch(rp_launcher *l, const rp_launch_spec *spec, rp_launch_result *res, rp_error *err) {
    (void)l;
    return rp_launch(spec, res, err);
}

static void local_close(rp_launcher *l) { free(l); }

rp_status rp_launcher_local(rp_launcher **out, rp_error *err) {
    rp_launcher *l = calloc(1, sizeof *l);
    if (!l) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    *l = (rp_launcher){.name = "local", .kind = RP_LAUNCHER_LOCAL, .nodes = 1, .launch = local_launch,
                       .close = local_close};
    *out = l;
    return RP_OK;
}

rp_status rp_launcher_open(const rp_launcher_opts *o, rp_launcher **out, rp_error *err) {
    *out = NULL;
    switch (o->kind) {
    case RP_LAUNCHER_LOCAL: return rp_launcher_local(out, err);
    case RP_LAUNCHER_SRUN: return rp_launcher_srun(o, out, err);
    case RP_LAUNCHER_MPIRUN: return rp_launcher_mpirun(o, out, err);
    }
    return RP_FAIL(err, RP_ERR_INVALID, "unknown launcher kind %d", (int)o->kind);
}

void rp_launcher_close(rp_launcher *l) {
    if (l) l->close(l);
}
