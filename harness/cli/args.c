#include "args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void rp_args_init(rp_args *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->argc = argc < RP_ARGS_MAX ? argc : RP_ARGS_MAX;
    a->argv = argv;
    if (a->argc > 0) a->used[0] = 1;
}

static int find(rp_args *a, const char *name, int start) {
    for (int i = start; i < a->argc; i++)
        if (a->argv[i][0] == '-' && a->argv[i][1] == '-' && strcmp(a->argv[i] + 2, name) == 0)
            return i;
    return -1;
}

const char *rp_arg_str(rp_args *a, const char *name, const char *def) {
    const char *v = def;
    for (int i = find(a, name, 1); i >= 0; i = find(a, name, i + 1)) {
        a->used[i] = 1;
        if (i + 1 >= a->argc) {
            if (a->err.code == RP_OK) RP_FAIL(&a->err, RP_ERR_INVALID, "option --%s needs a value", name);
            return def;
        }
        a->used[i + 1] = 1;
        v = a->argv[i + 1]; /* last one wins */
    }
    return v;
}

int rp_arg_strs(rp_args *a, const char *name, const char **out, int cap) {
    int n = 0;
    for (int i = find(a, name, 1); i >= 0; i = find(a, name, i + 1)) {
        a->used[i] = 1;
        if (i + 1 >= a->argc) {
            if (a->err.code == RP_OK) RP_FAIL(&a->err, RP_ERR_INVALID, "option --%s needs a value", name);
            break;
        }
        a->used[i + 1] = 1;
        if (n < cap) out[n++] = a->argv[i + 1];
    }
    return n;
}

long long rp_arg_int(rp_args *a, const char *name, long long def) {
    const char *s = rp_arg_str(a, name, NULL);
    if (!s) return def;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        if (a->err.code == RP_OK)
            RP_FAIL(&a->err, RP_ERR_INVALID, "option --%s: '%s' is not an integer", name, s);
        return def;
    }
    return v;
}

double rp_arg_double(rp_args *a, const char *name, double def) {
    const char *s = rp_arg_str(a, name, NULL);
    if (!s) return def;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) {
        if (a->err.code == RP_OK)
            RP_FAIL(&a->err, RP_ERR_INVALID, "option --%s: '%s' is not a number", name, s);
        return def;
    }
    return v;
}

int rp_arg_flag(rp_args *a, const char *name) {
    int found = 0;
    for (int i = find(a, name, 1); i >= 0; i = find(a, name, i + 1)) {
        a->used[i] = 1;
        found = 1;
    }
    return found;
}

int rp_args_positional(rp_args *a, const char **out, int cap) {
    int n = 0;
    for (int i = 1; i < a->argc; i++)
        if (!a->used[i] && strncmp(a->argv[i], "--", 2)) {
            if (n < cap) {
                out[n] = a->argv[i];
                a->used[i] = 1;
            }
            n++;
        }
    return n;
}

rp_status rp_args_finish(rp_args *a, rp_error *err) {
    if (a->err.code != RP_OK) {
        if (err) *err = a->err;
        return a->err.code;
    }
    for (int i = 1; i < a->argc; i++)
        if (!a->used[i])
            return RP_FAIL(err, RP_ERR_INVALID, "%s: unknown option or stray argument '%s' (see --help)",
                           a->argv[0], a->argv[i]);
    return RP_OK;
}
