/* cmd_classify.c — `repro classify CASE_DIR REF_DIR [TWIN_DIRS...]`: classifies one
 * finished case directory against its reference (harness/analysis/classify.h) and writes
 * CASE_DIR/classification.json. The sweep runner does this after every case; the
 * command redoes it by hand, e.g. with another factor. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/error.h"
#include "harness/cli/args.h"
#include "harness/analysis/classify.h"
#include "harness/cli/commands.h"
#include "harness/sweep/matrix.h"
#include "harness/store/store.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: repro classify CASE_DIR REF_DIR [TWIN_DIR...] [options]\n"
            "       repro classify --table RESULTS/MATRIX...\n"
            "\n"
            "Classifies the finished case in CASE_DIR against its reference REF_DIR as one of\n"
            "identical drift approx BUG MISMATCH CONFIG_ERROR CRASH HANG NONDETERMINISTIC SKIPPED,\n"
            "writes CASE_DIR/classification.json (the evidence) and prints the verdict and why.\n"
            "TWIN_DIRs are the reference's rounding twins (default REF_DIR/twins/<name>/, as the\n"
            "sweep runner stores them); CASE_DIR/teacher/ its teacher-forcing run (also its leak\n"
            "check), shadow/teacher/, invariant/teacher/, invariant/teacher-own/, fresh/, fresh-2/ and\n"
            "repeat-<k>/, each\n"
            "when present.\n"
            "\n"
            "options:\n"
            "  --factor F          a layer or step beyond F x the rounding envelope is a bug (default %g)\n"
            "  --twins N           default twins to read (%d..%d, default %d)\n"
            "  --approx-ssim S     approximate strategies: final SSIM at least S (default %g)\n"
            "  --approx-psnr P     and PSNR at least P dB (default %g)\n"
            "  --repeat N          runs of the case to compare (repeat-2 .. repeat-N; default 1)\n"
            "  --teacher DIR       the case's teacher-forcing run (default CASE_DIR/teacher)\n"
            "  --twin-base DIR     the reference the twins perturb, when REF_DIR is a golden\n"
            "  --out NAME          file written in CASE_DIR (default classification.json)\n"
            "\n"
            "\n"
            "--table lists the classified cases of stored sweeps (each directory a results/<matrix>)\n"
            "with where each divergence began (first step, first layer@step), then the confusion\n"
            "table of the cases that carry a verdict label (expect: drift, BUG, ...).\n"
            "\n"
            "exit: 0 the verdict meets the case's expected label (or, without one, is not failing;\n"
            "--table: the confusion table is diagonal), 1 otherwise, 2 usage or unreadable directories\n",
            RP_CLS_DEFAULT_FACTOR, RP_CLS_DEFAULT_TWINS, RP_CLS_MAX_TWINS, RP_CLS_DEFAULT_TWINS,
            RP_CLS_DEFAULT_APPROX_SSIM, RP_CLS_DEFAULT_APPROX_PSNR);
}

/* Member a (then b, when not NULL) of j as text into out: "-" when absent, numbers %g. */
static void field(const cJSON *j, const char *a, const char *b, char *out, size_t cap) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (cJSON_IsString(x)) snprintf(out, cap, "%s", x->valuestring);
    else if (cJSON_IsNumber(x)) snprintf(out, cap, "%g", x->valuedouble);
    else snprintf(out, cap, "-");
}

/* --table DIR...: every classified case of the sweeps stored in DIRs (<results>/<matrix>),
 * one line each with where its divergence began, then the confusion table of the labelled
 * ones. Returns 0 when that table is diagonal, 1 when not, 2 when a DIR has no summary. */
/* The margins of one precision: the largest ratio a case labelled drift reached, and the
 * smallest largest-ratio of a case labelled BUG that a ratio decided (each case's largest
 * ratio over its checked evidence: BUG by a ratio exactly when it exceeds the factor).
 * BUGs decided by exact evidence (replicas, decoded images, the invariant shadow, the serial
 * emulation, the leak check) have no ratio and are counted apart. */
typedef struct margin {
    char precision[16];
    double drift_max, bug_min, factor;
    char drift_id[17], bug_id[17];
    int n_drift, n_bug, n_exact;
} margin;

static margin *margin_of(margin *m, int *nm, const char *precision) {
    for (int i = 0; i < *nm; i++)
        if (!strcmp(m[i].precision, precision)) return &m[i];
    if (*nm == 8) return NULL;
    margin *g = &m[(*nm)++];
    memset(g, 0, sizeof *g);
    snprintf(g->precision, sizeof g->precision, "%s", precision);
    g->bug_min = INFINITY;
    return g;
}

/* Adds the case's classification j (labelled exs) to its precision's margins. */
static void margin_add(margin *m, int *nm, const cJSON *j, const char *exs, const char *id) {
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(j, "precision");
    const cJSON *lr = cJSON_GetObjectItemCaseSensitive(j, "largest_ratio");
    const cJSON *br = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "by_ratio")) ? lr : NULL;
    const cJSON *fa = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "evidence"), "envelope"), "factor");
    margin *g = cJSON_IsString(pr) ? margin_of(m, nm, pr->valuestring) : NULL;
    if (!g) return;
    if (cJSON_IsNumber(fa)) g->factor = fa->valuedouble;
    if (!strcmp(exs, "drift") && cJSON_IsNumber(lr)) {
        g->n_drift++;
        if (lr->valuedouble > g->drift_max) {
            g->drift_max = lr->valuedouble;
            snprintf(g->drift_id, sizeof g->drift_id, "%s", id);
        }
    } else if (!strcmp(exs, "BUG")) {
        if (!cJSON_IsNumber(br)) {
            g->n_exact++;
        } else {
            g->n_bug++;
            if (br->valuedouble < g->bug_min) {
                g->bug_min = br->valuedouble;
                snprintf(g->bug_id, sizeof g->bug_id, "%s", id);
            }
        }
    }
}

/* "margins fp32: drift max x1.97 (id, 42 cases): 32.5x below the factor 64; bug min x383
 * (id, 19 cases by a ratio, 3 by exact evidence): 6.0x above it" */
static void margins_print(const margin *m, int nm) {
    for (int i = 0; i < nm; i++) {
        const margin *g = &m[i];
        printf("margins %s (factor %g):", g->precision, g->factor);
        if (g->n_drift)
            printf(" drift max x%.3g (%s, %d cases): %.3gx below the factor;", g->drift_max, g->drift_id, g->n_drift,
                   g->drift_max > 0 ? g->factor / g->drift_max : INFINITY);
        if (g->n_bug)
            printf(" bug min x%.3g (%s, %d cases by a ratio): %.3gx above it;", g->bug_min, g->bug_id, g->n_bug,
                   g->bug_min / g->factor);
        if (g->n_exact) printf(" %d BUG case(s) by exact evidence (replicas, images, invariant shadow, emulation, leak, MISMATCH);", g->n_exact);
        printf("\n");
    }
}

static int table(int n, char **dirs) {
    rp_verdict ex[RP_MATRIX_MAX_CASES], vd[RP_MATRIX_MAX_CASES];
    int nl = 0, n_mg = 0;
    margin mg[8];
    printf("%-16s  %-16s  %-9s %7s %5s  %-34s %s\n", "id", "verdict", "expected", "PSNR", "step", "first layer",
           "name");
    for (int d = 0; d < n; d++) {
        char p[4200];
        rp_store_path(p, sizeof p, dirs[d], RP_ART_SUMMARY);
        cJSON *sum = NULL;
        rp_error err;
        if (rp_store_read_json(p, &sum, &err) != RP_OK) {
            rp_report_error(&err);
            return 2;
        }
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(sum, "cases")) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "name");
            const cJSON *expect = cJSON_GetObjectItemCaseSensitive(c, "expect");
            const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(c, "verdict");
            if (!cJSON_IsString(id) || !cJSON_IsString(verdict)) continue;
            char step[32] = "-", layer[128] = "-", psnr[32] = "-";
            const cJSON *pv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "vs_reference"),
                                                               "psnr"); /* the worst image's */
            if (cJSON_IsNumber(pv)) snprintf(psnr, sizeof psnr, "%.2f", pv->valuedouble);
            else if (cJSON_IsString(pv)) snprintf(psnr, sizeof psnr, "%.20s", pv->valuestring);
            cJSON *j = NULL;
            snprintf(p, sizeof p, "%s/%s/classification.json", dirs[d], id->valuestring);
            if (rp_store_read_json(p, &j, &err) == RP_OK) {
                const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "evidence");
                field(ev, "first_step", "step", step, sizeof step);
                const cJSON *fl = cJSON_GetObjectItemCaseSensitive(ev, "first_layer");
                if (fl) {
                    char ls[32] = "";
                    field(fl, "step", NULL, ls, sizeof ls);
                    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fl, "name");
                    snprintf(layer, sizeof layer, "%.100s@%s", cJSON_IsString(nm) ? nm->valuestring : "?", ls);
                }
                margin_add(mg, &n_mg, j, cJSON_IsString(expect) ? expect->valuestring : "", id->valuestring);
                cJSON_Delete(j);
            }
            const char *exs = cJSON_IsString(expect) ? expect->valuestring : "";
            printf("%-16s  %-16s  %-9s %7s %5s  %-34s %s\n", id->valuestring, verdict->valuestring, *exs ? exs : "-",
                   psnr, step, layer, cJSON_IsString(name) ? name->valuestring : "");
            const int e = *exs ? rp_verdict_parse(exs) : -1, v = rp_verdict_parse(verdict->valuestring);
            if (e >= 0 && v >= 0 && nl < RP_MATRIX_MAX_CASES) {
                ex[nl] = (rp_verdict)e;
                vd[nl++] = (rp_verdict)v;
            }
        }
        cJSON_Delete(sum);
    }
    margins_print(mg, n_mg);
    return rp_cls_confusion_print(stdout, ex, vd, nl) ? 1 : 0;
}

int rp_cmd_classify(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    if (argc >= 2 && !strcmp(argv[1], "--table")) {
        if (argc < 3) {
            usage(stderr);
            return 2;
        }
        return table(argc - 2, argv + 2);
    }
    rp_args a;
    rp_args_init(&a, argc, argv);
    rp_cls_inputs in;
    memset(&in, 0, sizeof in);
    rp_classify_opts_default(&in.opts);
    in.opts.factor = rp_arg_double(&a, "factor", RP_CLS_DEFAULT_FACTOR);
    in.opts.twins = (int)rp_arg_int(&a, "twins", RP_CLS_DEFAULT_TWINS);
    in.opts.approx_ssim = rp_arg_double(&a, "approx-ssim", RP_CLS_DEFAULT_APPROX_SSIM);
    in.opts.approx_psnr = rp_arg_double(&a, "approx-psnr", RP_CLS_DEFAULT_APPROX_PSNR);
    in.repeat = (int)rp_arg_int(&a, "repeat", 1);
    in.teacher_dir = rp_arg_str(&a, "teacher", NULL);
    in.twin_base_dir = rp_arg_str(&a, "twin-base", NULL);
    in.out_name = rp_arg_str(&a, "out", NULL);
    const char *pos[2 + RP_CLS_MAX_TWINS * 4];
    const int cap = (int)(sizeof pos / sizeof pos[0]);
    int npos = rp_args_positional(&a, pos, cap);
    if (npos > cap) npos = cap; /* the rest stay unused: rp_args_finish names them */
    rp_error err;
    rp_error_clear(&err);
    if (rp_args_finish(&a, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    if (npos < 2) {
        usage(stderr);
        return 2;
    }
    if (!(in.opts.factor > 1) || in.opts.twins < 1 || in.opts.twins > RP_CLS_MAX_TWINS || in.repeat < 1 ||
        in.repeat > 100 || (in.out_name && (strchr(in.out_name, '/') || !*in.out_name))) {
        fprintf(stderr, "repro classify: --factor must be > 1, --twins in 1..%d, --repeat in 1..100, --out a file "
                        "name\n", RP_CLS_MAX_TWINS);
        return 2;
    }
    in.case_dir = pos[0];
    in.ref_dir = pos[1];
    in.twin_dirs = npos > 2 ? pos + 2 : NULL;
    in.n_twins = npos - 2;
    rp_verdict v;
    int pass = 0;
    if (rp_classify_dir(&in, &v, &pass, &err) != RP_OK) {
        rp_report_error(&err);
        return 2;
    }
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", in.case_dir, in.out_name ? in.out_name : "classification.json");
    cJSON *j = NULL;
    if (rp_store_read_json(p, &j, &err) == RP_OK) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "summary");
        printf("%s: %s%s\n", rp_verdict_name(v), cJSON_IsString(s) ? s->valuestring : "", pass ? "" : "  [FAIL]");
        cJSON_Delete(j);
    } else {
        printf("%s\n", rp_verdict_name(v));
    }
    return pass ? 0 : 1;
}
