/* args.h — a tiny "--name value" / "--flag" parser shared by every subcommand.
 *
 * Each lookup marks the option as used; rp_args_finish() then reports the
 * first unknown or malformed option, so typos never pass silently. Values are
 * validated strictly (the whole string must parse) and errors name the option. */
#ifndef REPRO_ARGS_H
#define REPRO_ARGS_H

#include <stdint.h>

#include "engine/error.h"

#define RP_ARGS_MAX 128

typedef struct rp_args {
    int argc;
    char **argv;
    unsigned char used[RP_ARGS_MAX];
    rp_error err;       /* first parse error seen */
} rp_args;

/* argv[0] is the subcommand name and is skipped. */
void rp_args_init(rp_args *a, int argc, char **argv);
const char *rp_arg_str(rp_args *a, const char *name, const char *def);
/* All values of a repeatable option, in order; returns the count (<= cap). */
int rp_arg_strs(rp_args *a, const char *name, const char **out, int cap);
long long rp_arg_int(rp_args *a, const char *name, long long def);
double rp_arg_double(rp_args *a, const char *name, double def);
int rp_arg_flag(rp_args *a, const char *name);
/* The operands: arguments no option has taken and not starting with "--" (call it after
 * reading every option). Stores and marks used the first cap of them; returns how many
 * there are in all (the rest stay unused, so rp_args_finish reports them). */
int rp_args_positional(rp_args *a, const char **out, int cap);
/* Returns RP_OK, or the first error: a bad value, or an unused (unknown) option. */
rp_status rp_args_finish(rp_args *a, rp_error *err);

#endif
