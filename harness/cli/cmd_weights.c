/* cmd_weights.c — `repro weights`: write deterministic synthetic weights.
 *
 * The file is a pure function of (model, depth, weight seed, init version):
 * writing it twice gives identical bytes, so runs on different machines can
 * share results by (model, seed) without shipping weights. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/error.h"
#include "engine/models/registry.h"
#include "engine/params.h"
#include "engine/strutil.h"
#include "harness/cli/args.h"
#include "harness/cli/commands.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro weights --model PRESET --out FILE.safetensors [--weight-seed S] [--depth N]\n"
            "                     [--single-depth N]\n"
            "\n"
            "Writes deterministic synthetic weights (F32 safetensors, init %s) for a model preset.\n"
            "  --model PRESET     one of: %s\n"
            "  --out FILE         output path (written atomically)\n"
            "  --weight-seed S    unsigned 64-bit seed (default 0)\n"
            "  --depth N          override the transformer depth (default: the preset's); FLUX: the\n"
            "                     double-stream blocks, single-stream blocks following the preset's ratio\n"
            "  --single-depth N   FLUX: keep N single-stream blocks instead\n",
            RP_SYNTHETIC_INIT_VERSION, rp_model_presets());
}

/* Strict unsigned 64-bit decimal parse; 0 on any junk, sign or overflow. */
int rp_cmd_weights(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) { usage(stdout); return 0; }
    const char *model = rp_arg_str(&a, "model", NULL);
    const char *out = rp_arg_str(&a, "out", NULL);
    const char *seed_s = rp_arg_str(&a, "weight-seed", "0");
    long long depth = rp_arg_int(&a, "depth", 0);
    long long single_depth = rp_arg_int(&a, "single-depth", 0);
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) { rp_report_error(&err); return 2; }
    uint64_t seed = 0;
    if (!model || !out) {
        RP_FAIL(&err, RP_ERR_INVALID, "weights: --model and --out are required (see repro weights --help)");
        rp_report_error(&err);
        return 2;
    }
    if (!rp_parse_u64(seed_s, &seed)) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --weight-seed: '%s' is not an unsigned 64-bit integer", seed_s);
        rp_report_error(&err);
        return 2;
    }
    if (depth < 0 || depth > 1000) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --depth: %lld is out of range (1..1000, 0 = preset)", depth);
        rp_report_error(&err);
        return 2;
    }

    if (single_depth < 0 || single_depth > 1000) {
        RP_FAIL(&err, RP_ERR_INVALID, "option --single-depth: %lld is out of range (1..1000, 0 = follow --depth)",
                single_depth);
        rp_report_error(&err);
        return 2;
    }

    rp_param_list l = {0};
    rp_status s = rp_model_param_specs_depth(model, (int)depth, (int)single_depth, &l, &err);
    if (s == RP_OK) s = rp_params_write_synthetic(&l, model, seed, out, &err);
    if (s == RP_OK)
        printf("wrote %s: %d tensors, %zu parameters\n", out, l.n, rp_params_total(&l));
    rp_params_free(&l);
    return s == RP_OK ? 0 : rp_report_error(&err);
}
