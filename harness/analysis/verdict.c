#include "verdict.h"

#include <string.h>

static const char *const NAMES[RP_V_COUNT] = {
    "identical", "drift", "approx", "BUG", "MISMATCH", "CONFIG_ERROR",
    "CRASH", "HANG", "NONDETERMINISTIC", "SKIPPED"};

const char *rp_verdict_name(rp_verdict v) {
    return (v >= 0 && v < RP_V_COUNT) ? NAMES[v] : "unknown";
}

int rp_verdict_parse(const char *s) {
    for (int i = 0; i < RP_V_COUNT; i++)
        if (!strcmp(s, NAMES[i])) return i;
    return -1;
}

int rp_verdict_fails(rp_verdict v, int determinism_promised) {
    switch (v) {
    case RP_V_BUG: case RP_V_MISMATCH: case RP_V_CRASH: case RP_V_HANG: case RP_V_CONFIG_ERROR:
        return 1;
    case RP_V_NONDETERMINISTIC:
        return determinism_promised;
    default:
        return 0;
    }
}
