/* common.c — what several subcommands share (see common.h). */
#include "harness/cli/common.h"

#include <stdio.h>
#include <string.h>

#include "engine/attention/attention.h"
#include "engine/strutil.h"

rp_status rp_cli_weight_seed(const char *cmd, const char *wseed_s, const char *weights, const char *wopt,
                             uint64_t *wseed, rp_error *err) {
    *wseed = 0;
    if (wseed_s && !rp_parse_u64(wseed_s, wseed))
        return RP_FAIL(err, RP_ERR_INVALID, "option --weight-seed: '%s' is not an unsigned 64-bit integer",
                       wseed_s);
    if (weights && wseed_s)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: give %s or --weight-seed, not both", cmd, wopt);
    return RP_OK;
}

rp_status rp_cli_cpu_ctx(long long threads, const char *prec_s, const char *attn_s, rp_ctx *ctx, rp_error *err) {
    if (threads < 0 || threads > 1024)
        return RP_FAIL(err, RP_ERR_INVALID, "option --threads: %lld is out of range (0..1024)", threads);
    *ctx = rp_ctx_default();
    ctx->threads = (int)threads;
    if (!strcmp(prec_s, "fp32")) ctx->precision = RP_PREC_FP32;
    else if (!strcmp(prec_s, "bf16")) ctx->precision = RP_PREC_BF16;
    else return RP_FAIL(err, RP_ERR_INVALID, "option --precision: '%s' is not fp32 or bf16", prec_s);
    return rp_attn_kind_parse(attn_s, &ctx->attn.kind, err);
}

int rp_cli_run_matrix(const char *file, const rp_runner_opts *o, rp_matrix *m, rp_sweep *s, rp_error *err) {
    if (rp_matrix_load(file, m, err) != RP_OK) {
        /* the message already says FILE:LINE:COLUMN; the source location would be noise */
        fprintf(stderr, "repro: error: %s\n", err->msg);
        rp_matrix_free(m);
        return 2;
    }
    const rp_status st = rp_runner_run_cancellable(m, o, s, err);
    if (st == RP_OK) return -1;
    rp_report_error(err);
    rp_sweep_free(s);
    rp_matrix_free(m);
    return st == RP_ERR_INVALID ? 2 : 1;
}
