/* plots.c — the report's plots, drawn by gnuplot from one script.
 *
 * Everything gnuplot needs is in plots/plots.gp: the data as inline data
 * blocks (numbers %.17g), fixed terminal settings (SVG and PNG, 640x400, sans
 * 10) and fixed colours, so the same results give the same script and gnuplot
 * the same files. gnuplot runs once, in the plots directory, writing NAME.svg.part
 * and NAME.png.part; each pair is renamed into place when both are there, so a
 * plot file is never half-written. gnuplot is optional: without it (or when it
 * fails) the plots are listed as skipped with the reason and every other report
 * is still written. */
#include "reports/report.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/fsutil.h"
#include "engine/parallel/strategy.h"
#include "harness/store/store.h"
#include "reports/rutil.h"

void rp_plots_free(rp_plots *p) {
    if (!p) return;
    free(p->p);
    p->p = NULL;
    p->n = p->cap = 0;
}

const rp_plot *rp_plots_find(const rp_plots *p, const char *name) {
    for (int i = 0; p && i < p->n; i++)
        if (!strcmp(p->p[i].name, name)) return &p->p[i];
    return NULL;
}

/* A new, not yet written plot at the end of ps (NULL out of memory). */
static rp_plot *plot_add(rp_plots *ps, const char *name, const char *title) {
    if (ps->n == ps->cap) {
        const int cap = ps->cap ? ps->cap * 2 : 16;
        rp_plot *q = realloc(ps->p, sizeof *q * (size_t)cap);
        if (!q) return NULL;
        ps->p = q;
        ps->cap = cap;
    }
    rp_plot *p = &ps->p[ps->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->title, sizeof p->title, "%s", title);
    return p;
}

/* s for a single-quoted gnuplot string: quotes, backslashes and control characters dropped. */
static void gp_text(rp_sb *b, const char *s) {
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p >= 0x20 && *p != '\'' && *p != '\\' && *p != '"') rp_sb_putn(b, p, 1);
}

/* A data value: NaN when not plottable (gnuplot skips "NaN"), else %.17g. */
static void gp_num(rp_sb *b, double v) {
    if (!isfinite(v)) rp_sb_puts(b, "NaN");
    else rp_sb_printf(b, "%.17g", v);
}

/* The fixed look of every plot. */
static const char PREAMBLE[] =
    "set encoding utf8\n"
    "set border 3 lc rgb '#555555'\n"
    "set tics nomirror textcolor rgb '#333333'\n"
    "set grid lc rgb '#e6e6e6' lw 1\n"
    "set key below horizontal nobox samplen 2 spacing 1.1 width 1\n"
    "set linetype 1 lc rgb '#1f77b4' lw 2 pt 7 ps 0.9\n"
    "set linetype 2 lc rgb '#ff7f0e' lw 2 pt 5 ps 0.9\n"
    "set linetype 3 lc rgb '#2ca02c' lw 2 pt 9 ps 1.0\n"
    "set linetype 4 lc rgb '#d62728' lw 2 pt 11 ps 1.0\n"
    "set linetype 5 lc rgb '#9467bd' lw 2 pt 13 ps 1.0\n"
    "set linetype 6 lc rgb '#8c564b' lw 2 pt 7 ps 0.9\n"
    "set linetype 7 lc rgb '#e377c2' lw 2 pt 5 ps 0.9\n"
    "set linetype 8 lc rgb '#7f7f7f' lw 2 pt 9 ps 1.0\n"
    "set linetype cycle 8\n";

/* Opens the plot: both terminals are set per plot so a plot never inherits
 * another's settings (reset keeps the terminal, not the look). */
static void gp_begin(rp_sb *b, const char *name, const char *title) {
    rp_sb_puts(b, "\nreset\n");
    rp_sb_puts(b, PREAMBLE);
    rp_sb_puts(b, "set title '");
    gp_text(b, title);
    rp_sb_puts(b, "' noenhanced font 'sans,11'\n");
    rp_sb_printf(b, "set terminal svg size 640,400 dynamic enhanced font 'sans,10' background '#ffffff'\n"
                    "set output '%s.svg.part'\n", name);
}

/* The plot command is in cmd; drawn to SVG, then again to PNG. */
static void gp_end(rp_sb *b, const char *name, const char *cmd) {
    rp_sb_puts(b, cmd);
    rp_sb_printf(b, "\nunset output\n"
                    "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                    "  set terminal pngcairo size 640,400 enhanced font 'sans,10' background '#ffffff'\n"
                    "} else {\n"
                    "  set terminal png size 640,400 enhanced font 'sans,10' background '#ffffff'\n"
                    "}\n"
                    "set output '%s.png.part'\n", name);
    rp_sb_puts(b, cmd);
    rp_sb_puts(b, "\nunset output\n");
}

/* ---- what to plot ------------------------------------------------------------------- */

/* The case's strategy ("dp", "ulysses+ring", "serial") into buf: the strategies
 * (engine/parallel/strategy.h) whose degree is above 1. */
static void strategy_of(const rp_rcase *c, char *buf, size_t cap) {
    buf[0] = '\0';
    size_t n = 0;
    for (int k = 0; k < RP_PAR_N_DEGREES; k++) {
        const rp_par_strategy_info *s = rp_par_degree_strategy(k);
        if (rp_rcase_num(c, s->field, 1) > 1)
            n += (size_t)snprintf(buf + n, n < cap ? cap - n : 0, "%s%s", n ? "+" : "", s->name);
    }
    if (!buf[0]) snprintf(buf, cap, "serial");
}

/* A case compared with another output (its reference, or run A's) that has image metrics. */
static int has_quality(const rp_rcase *c) { return c->config && c->ref_dir[0] && !isnan(rp_rcase_psnr(c)); }

/* The y value drawn for PSNR: +inf (identical) at cap. */
static double psnr_cap(const rp_run *r) {
    double mx = 0;
    for (int i = 0; i < r->n; i++) {
        const double p = rp_rcase_psnr(&r->cases[i]);
        if (isfinite(p) && p > mx) mx = p;
    }
    double cap = ceil((mx + 10) / 10) * 10;
    return cap < 100 ? 100 : cap;
}

typedef struct series {
    char label[96];
    int n;
    double x[64], y[64];
} series;

/* Adds (x, y) to the series labelled label, keeping the worst (lowest, or
 * highest with hi) y per x. */
static void series_put(series *s, int *ns, int max, const char *label, double x, double y, int hi) {
    int k = 0;
    while (k < *ns && strcmp(s[k].label, label)) k++;
    if (k == *ns) {
        if (*ns == max) return;
        memset(&s[k], 0, sizeof s[k]);
        snprintf(s[k].label, sizeof s[k].label, "%s", label);
        (*ns)++;
    }
    series *q = &s[k];
    for (int i = 0; i < q->n; i++)
        if (q->x[i] == x) {
            if (hi ? y > q->y[i] : y < q->y[i]) q->y[i] = y;
            return;
        }
    if (q->n == 64) return;
    int i = q->n++;
    while (i > 0 && q->x[i - 1] > x) {
        q->x[i] = q->x[i - 1];
        q->y[i] = q->y[i - 1];
        i--;
    }
    q->x[i] = x;
    q->y[i] = y;
}

/* 1 when some point (the worst of its x, so the one drawn) is at y. */
static int series_reach(const series *s, int ns, double y) {
    for (int k = 0; k < ns; k++)
        for (int i = 0; i < s[k].n; i++)
            if (s[k].y[i] == y) return 1;
    return 0;
}

/* Data blocks $NAME_k of the series and the plot command drawing them. */
static void series_blocks(rp_sb *b, const char *name, const series *s, int ns, rp_sb *cmd, const char *style) {
    for (int k = 0; k < ns; k++) {
        rp_sb_printf(b, "$%s_%d << EOD\n", name, k);
        for (int i = 0; i < s[k].n; i++) {
            gp_num(b, s[k].x[i]);
            rp_sb_puts(b, " ");
            gp_num(b, s[k].y[i]);
            rp_sb_puts(b, "\n");
        }
        rp_sb_puts(b, "EOD\n");
        rp_sb_printf(cmd, "%s$%s_%d using 1:2 with %s lt %d title '", k ? ", " : "plot ", name, k, style, k + 1);
        gp_text(cmd, s[k].label);
        rp_sb_puts(cmd, "' noenhanced");
    }
}

#define MAX_SERIES 16

/* PSNR (which = 0) or SSIM (1) versus the parallel degree, a line per strategy. */
static int plot_vs_degree(const rp_run *r, rp_sb *b, int which, char *why, size_t cap) {
    series s[MAX_SERIES];
    int ns = 0, at_cap = 0;
    const double pc = psnr_cap(r);
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        if (!has_quality(c)) continue;
        char st[64];
        strategy_of(c, st, sizeof st);
        double y = which ? rp_rcase_ssim(c) : rp_rcase_psnr(c);
        if (!which && isinf(y)) y = pc;
        if (isnan(y)) continue;
        series_put(s, &ns, MAX_SERIES, st, c->world > 0 ? c->world : 1, y, 0);
    }
    if (!ns) {
        snprintf(why, cap, "no case with image metrics against a reference");
        return 0;
    }
    at_cap = series_reach(s, ns, pc);
    const char *name = which ? "ssim_vs_degree" : "psnr_vs_degree";
    rp_sb cmd = {0};
    series_blocks(b, name, s, ns, &cmd, "linespoints");
    gp_begin(b, name, which ? "Final SSIM vs parallel degree (worst image per point)"
                            : "Final PSNR vs parallel degree (worst image per point)");
    rp_sb_puts(b, "set xlabel 'parallel degree (ranks)'\nset logscale x 2\nset xtics 2\n"
                  "set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n");
    if (which) {
        rp_sb_puts(b, "set ylabel 'SSIM'\n");
    } else if (!at_cap) {
        rp_sb_puts(b, "set ylabel 'PSNR (dB)'\n");
    } else {
        rp_sb_printf(b, "set ylabel 'PSNR (dB)'\nset arrow from graph 0, first %g to graph 1, first %g nohead "
                        "dt 2 lc rgb '#999999'\nset label 'identical (inf) drawn at %g dB' at graph 0.02, first %g "
                        "offset 0, 0.7 textcolor rgb '#777777' font 'sans,9'\n", pc, pc, pc, pc);
    }
    gp_end(b, name, cmd.p ? cmd.p : "");
    rp_sb_free(&cmd);
    return 1;
}

/* PSNR versus warmup steps for the approximate strategies (pipefusion, patch),
 * a line per strategy and world size. */
static int plot_warmup(const rp_run *r, rp_sb *b, char *why, size_t cap) {
    series s[MAX_SERIES];
    int ns = 0, at_cap = 0;
    const double pc = psnr_cap(r);
    double bound = NAN;
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        if (!has_quality(c)) continue;
        if (rp_rcase_num(c, "pipefusion", 1) <= 1 && rp_rcase_num(c, "patch", 1) <= 1) continue;
        char st[64], label[96];
        strategy_of(c, st, sizeof st);
        snprintf(label, sizeof label, "%s, %d ranks", st, c->world);
        double y = rp_rcase_psnr(c);
        if (isinf(y)) y = pc;
        series_put(s, &ns, MAX_SERIES, label, rp_rcase_num(c, "warmup_steps", 0), y, 0);
        const double bp = rp_j_num(rp_j_path(c->classification, "evidence", "approx", NULL), "bound_psnr", NAN);
        if (isnan(bound)) bound = bp;
    }
    if (!ns) {
        snprintf(why, cap, "no pipefusion or patch case with image metrics");
        return 0;
    }
    at_cap = series_reach(s, ns, pc);
    rp_sb cmd = {0};
    series_blocks(b, "quality_vs_warmup", s, ns, &cmd, "linespoints");
    gp_begin(b, "quality_vs_warmup", "Approximate strategies: final PSNR vs warmup steps");
    rp_sb_puts(b, "set xlabel 'warmup steps (synchronous before stale activations)'\nset ylabel 'PSNR (dB)'\n"
                  "set xtics 1\nset offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05\n");
    if (at_cap)
        rp_sb_printf(b, "set arrow from graph 0, first %g to graph 1, first %g nohead dt 2 lc rgb '#999999'\n"
                        "set label 'identical (inf) drawn at %g dB' at graph 0.02, first %g offset 0, 0.7 "
                        "textcolor rgb '#777777' font 'sans,9'\n", pc, pc, pc, pc);
    if (!isnan(bound))
        rp_sb_printf(b, "set arrow from graph 0, first %.17g to graph 1, first %.17g nohead dt 2 lc rgb '#d62728'\n"
                        "set label 'quality bound' at graph 0.02, first %.17g offset 0, 0.7 textcolor rgb '#d62728' "
                        "font 'sans,9'\n", bound, bound, bound);
    gp_end(b, "quality_vs_warmup", cmd.p ? cmd.p : "");
    rp_sb_free(&cmd);
    return 1;
}

/* Mean and largest share of changed pixels per attention variant. */
static int plot_attention(const rp_run *r, rp_sb *b, char *why, size_t cap) {
    char names[16][32];
    double sum[16] = {0}, mx[16] = {0};
    int cnt[16] = {0}, nv = 0;
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        const double ch = rp_rcase_changed(c);
        if (!has_quality(c) || isnan(ch)) continue;
        char a[32];
        rp_rcase_field(c, "attention", a, sizeof a);
        int k = 0;
        while (k < nv && strcmp(names[k], a)) k++;
        if (k == nv) {
            if (nv == 16) continue;
            snprintf(names[nv++], sizeof names[0], "%s", a);
        }
        sum[k] += ch;
        if (ch > mx[k]) mx[k] = ch;
        cnt[k]++;
    }
    if (!nv) {
        snprintf(why, cap, "no case with image metrics against a reference");
        return 0;
    }
    rp_sb_puts(b, "$changed_by_attention << EOD\n");
    for (int k = 0; k < nv; k++) {
        rp_sb_puts(b, "\"");
        gp_text(b, names[k][0] ? names[k] : "?");
        rp_sb_puts(b, "\" ");
        gp_num(b, 100 * sum[k] / cnt[k]);
        rp_sb_puts(b, " ");
        gp_num(b, 100 * mx[k]);
        rp_sb_printf(b, " %d\n", cnt[k]);
    }
    rp_sb_puts(b, "EOD\n");
    gp_begin(b, "changed_by_attention", "Share of changed pixels per attention variant");
    rp_sb_puts(b, "set ylabel 'pixels changed vs reference (%)'\nset yrange [0:*]\n"
                  "set style data histogram\nset style histogram clustered gap 1\n"
                  "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset xtics nomirror scale 0\n"
                  "set grid noxtics\n");
    gp_end(b, "changed_by_attention",
           "plot $changed_by_attention using 2:xtic(stringcolumn(1).' ('.strcol(4).')') title 'mean' lt 1, "
           "'' using 3 title 'largest' lt 2");
    return 1;
}

/* Local and accumulated error of one case on the trajectory's rows (x = 0 the
 * initial noise, x = k + 1 the result of step k): the local error of step k and
 * its rounding envelope (shaded) at k + 1, the accumulated error and its
 * envelope per row, the bug threshold (factor x max(envelope, floor)) dashed,
 * the first failing step marked. Log scale: zeros (exact) are not drawn. */
static int plot_steps(const rp_rcase *c, const char *name, rp_sb *b, char *why, size_t cap) {
    int nl = 0, na = 0, ne = 0, nea = 0;
    double *loc = rp_rcase_series(c, "local", &nl);
    double *acc = rp_rcase_series(c, "accumulated", &na);
    double *env = rp_rcase_series(c, "envelope", &ne);
    double *enva = rp_rcase_series(c, "envelope_accumulated", &nea);
    const cJSON *envj = rp_j_path(c->classification, "evidence", "envelope", NULL);
    const double factor = rp_j_num(envj, "factor", NAN), floor_ = rp_j_num(envj, "floor", 0);
    /* rows 0..T */
    int rows = na > nea ? na : nea;
    if (nl + 1 > rows) rows = nl + 1;
    if (ne + 1 > rows) rows = ne + 1;
    double lo = INFINITY, hi = 0;
    for (int r = 0; r < rows; r++) {
        const double thr = r >= 1 && r - 1 < ne && isfinite(factor) ? factor * fmax(env[r - 1], floor_) : NAN;
        const double v[5] = {r >= 1 && r - 1 < nl ? loc[r - 1] : NAN, r < na ? acc[r] : NAN,
                             r >= 1 && r - 1 < ne ? env[r - 1] : NAN, r < nea ? enva[r] : NAN, thr};
        for (int k = 0; k < 5; k++)
            if (isfinite(v[k]) && v[k] > 0) {
                lo = v[k] < lo ? v[k] : lo;
                hi = v[k] > hi ? v[k] : hi;
            }
    }
    const int ok = rows >= 2 && hi > 0;
    if (ok) {
        /* the band starts a decade below the smallest value drawn */
        const double ymin = pow(10, floor(log10(lo)) - 1), ymax = pow(10, ceil(log10(hi)) + 0.3);
        rp_sb_printf(b, "$%s << EOD\n", name);
        for (int r = 0; r < rows; r++) {
            const double l = r >= 1 && r - 1 < nl ? loc[r - 1] : NAN, el = r >= 1 && r - 1 < ne ? env[r - 1] : NAN;
            const double thr = isfinite(el) && isfinite(factor) ? factor * fmax(el, floor_) : NAN;
            const double col[5] = {l, r < na ? acc[r] : NAN, el, r < nea ? enva[r] : NAN, thr};
            rp_sb_printf(b, "%d", r);
            for (int k = 0; k < 5; k++) {
                rp_sb_puts(b, " ");
                gp_num(b, col[k] > 0 ? col[k] : NAN);
            }
            rp_sb_puts(b, "\n");
        }
        rp_sb_puts(b, "EOD\n");
        char title[400];
        snprintf(title, sizeof title, "Error per step: %.120s [%s]%s", c->name, c->id,
                 ne || nea ? "" : " (no rounding envelope recorded)");
        gp_begin(b, name, title);
        rp_sb_printf(b, "set xlabel 'after step (0-based; noise = the initial noise)'\n"
                        "set ylabel 'relative L2 error'\nset logscale y\n"
                        "set format y '10^{%%L}'\nset yrange [%.17g:%.17g]\nset xrange [-0.5:%g]\n",
                        ymin, ymax, rows - 0.5);
        /* x tics: "noise", then the 0-based step whose result the row is */
        rp_sb_puts(b, "set xtics (\"noise\" 0");
        const int every = rows > 30 ? (rows + 14) / 15 : 1;
        for (int r = 1; r < rows; r++)
            if ((r - 1) % every == 0) rp_sb_printf(b, ", \"%d\" %d", r - 1, r);
        rp_sb_puts(b, ")\n");
        const cJSON *fs = rp_j_path(c->classification, "evidence", "first_step", NULL);
        const double k = rp_j_num(fs, "step", NAN);
        if (fs && isfinite(k))
            rp_sb_printf(b, "set arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lw 1.5 lc rgb '#d62728'\n"
                            "set label 'first failing step %g' at %g, graph 0.95 offset 0.5, 0 "
                            "textcolor rgb '#d62728' font 'sans,9'\n", k + 1, k + 1, k, k + 1);
        rp_sb cmd = {0};
        rp_sb_puts(&cmd, "plot ");
        const char *sep = "";
        if (ne) {
            rp_sb_printf(&cmd, "$%s using 1:(%.17g):4 with filledcurves fc rgb '#cfe8cf' fs solid 0.9 noborder "
                               "title 'rounding envelope (local)'", name, ymin);
            sep = ", ";
        }
        if (ne && isfinite(factor)) {
            rp_sb_printf(&cmd, "%s$%s using 1:6 with lines lc rgb '#d62728' lw 1 dt 3 title 'bug threshold (x%g)'",
                         sep, name, factor);
            sep = ", ";
        }
        if (nea) {
            rp_sb_printf(&cmd, "%s$%s using 1:5 with lines lc rgb '#2e7d32' lw 1.2 dt 2 "
                               "title 'rounding envelope (accumulated)'", sep, name);
            sep = ", ";
        }
        if (nl) {
            rp_sb_printf(&cmd, "%s$%s using 1:2 with linespoints lt 4 title 'local error (one step)'", sep, name);
            sep = ", ";
        }
        if (na) rp_sb_printf(&cmd, "%s$%s using 1:3 with linespoints lt 1 title 'accumulated error'", sep, name);
        gp_end(b, name, cmd.p ? cmd.p : "");
        rp_sb_free(&cmd);
    } else {
        snprintf(why, cap, rows >= 2 ? "every step is exact (nothing to draw on a log scale)" : "no per-step errors");
    }
    free(loc);
    free(acc);
    free(env);
    free(enva);
    return ok;
}

/* ---- running gnuplot ---------------------------------------------------------------- */

/* The gnuplot program into buf; 0 when there is none. $REPRO_GNUPLOT names one
 * (a path, or a name on PATH; empty: none), else "gnuplot" on PATH. */
static int find_gnuplot(char *buf, size_t cap) {
    const char *want = getenv("REPRO_GNUPLOT");
    if (!want) want = "gnuplot";
    if (!want[0]) return 0;
    if (strchr(want, '/')) {
        snprintf(buf, cap, "%s", want);
        return access(buf, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const size_t n = strcspn(path, ":");
        if (n && !rp_pathf(buf, cap, "%.*s/%s", (int)n, path, want) && access(buf, X_OK) == 0 && rp_is_file(buf))
            return 1;
        path += n;
        if (*path == ':') path++;
    }
    return 0;
}

/* Runs prog on script in dir with stdin from /dev/null and stdout+stderr to log;
 * returns the exit status (-1 when it could not run). */
static int run_gnuplot(const char *prog, const char *dir, const char *script, const char *log) {
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const int in = open("/dev/null", O_RDONLY);
        const int out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0666);
        if (in < 0 || out < 0 || chdir(dir) != 0) _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        /* a fixed locale: decimal points, not commas, in the tick labels */
        setenv("LC_ALL", "C.UTF-8", 1);
        unsetenv("DISPLAY");
        execl(prog, prog, script, (char *)NULL);
        _exit(127);
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* The first error line of gnuplot's log into buf. */
static void log_reason(const char *log, char *buf, size_t cap) {
    FILE *f = fopen(log, "r");
    snprintf(buf, cap, "gnuplot failed");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strstr(line, "rror") || strstr(line, "arning")) {
            snprintf(buf, cap, "gnuplot: %.200s", line);
            break;
        }
    }
    fclose(f);
}

/* Renames dir/NAME.EXT.part to dir/NAME.EXT (atomically, over a regular file only). */
static rp_status publish(const char *dir, const char *name, const char *ext, rp_error *err) {
    char part[RP_REPORT_PATHLEN], fin[RP_REPORT_PATHLEN];
    if (rp_pathf(part, sizeof part, "%s/%s.%s.part", dir, name, ext) ||
        rp_pathf(fin, sizeof fin, "%s/%s.%s", dir, name, ext))
        return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", dir);
    RP_TRY(rp_atomic_target_ok(fin, err));
    if (rename(part, fin) != 0) return RP_FAIL(err, RP_ERR_IO, "cannot rename %s: %s", part, strerror(errno));
    return RP_OK;
}

/* Plans the plots into out and their script into b (plots without data skipped). */
static rp_status plan(const rp_run *r, rp_plots *out, rp_sb *bp, rp_error *err) {
    rp_sb *const b = bp; /* the caller frees it, also after an error */
    rp_sb_puts(b, "# plots.gp — written by `repro report`; run in this directory: gnuplot plots.gp\n");
    /* the plots, in a fixed order; those without data are skipped now */
    struct { const char *name, *title; } fixed[] = {
        {"psnr_vs_degree", "Final PSNR vs parallel degree per strategy"},
        {"ssim_vs_degree", "Final SSIM vs parallel degree per strategy"},
        {"quality_vs_warmup", "Quality vs warmup steps (approximate strategies)"},
        {"changed_by_attention", "Share of changed pixels per attention variant"}};
    for (int k = 0; k < 4; k++) {
        rp_plot *p = plot_add(out, fixed[k].name, fixed[k].title);
        if (!p) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        char why[256] = "";
        const int has = k < 2 ? plot_vs_degree(r, b, k, why, sizeof why)
                        : k == 2 ? plot_warmup(r, b, why, sizeof why) : plot_attention(r, b, why, sizeof why);
        if (has) p->written = 1; /* provisionally: until gnuplot has run */
        else snprintf(p->reason, sizeof p->reason, "%s", why);
    }
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        if (!c->config || !c->ref_dir[0] || strcmp(c->status, "ok")) continue;
        char name[96], title[160], why[256] = "";
        snprintf(name, sizeof name, "steps_%.40s", c->id);
        for (char *s = name; *s; s++)
            if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) *s = '_';
        snprintf(title, sizeof title, "Error per step: %.130s", c->name);
        rp_plot *p = plot_add(out, name, title);
        if (!p) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        snprintf(p->case_id, sizeof p->case_id, "%s", c->id);
        if (plot_steps(c, name, b, why, sizeof why)) p->written = 1;
        else snprintf(p->reason, sizeof p->reason, "%s", why);
    }
    return RP_OK;
}

rp_status rp_plots_skip_all(const rp_run *r, const char *reason, rp_plots *out, rp_error *err) {
    memset(out, 0, sizeof *out);
    rp_sb b = {0};
    rp_status st = plan(r, out, &b, err);
    rp_sb_free(&b);
    for (int k = 0; st == RP_OK && k < out->n; k++)
        if (out->p[k].written) {
            out->p[k].written = 0;
            snprintf(out->p[k].reason, sizeof out->p[k].reason, "%s", reason);
        }
    return st;
}

rp_status rp_plots_render(const rp_run *r, const char *out_dir, rp_plots *out, rp_error *err) {
    memset(out, 0, sizeof *out);
    char dir[RP_REPORT_PATHLEN];
    if (rp_pathf(dir, sizeof dir, "%s/plots", out_dir)) return RP_FAIL(err, RP_ERR_INVALID, "path too long: %s", out_dir);
    RP_TRY(rp_store_mkdirs(dir, err));
    rp_sb b = {0};
    rp_status st = plan(r, out, &b, err);
    if (st != RP_OK) {
        rp_sb_free(&b);
        return st;
    }
    char script[RP_REPORT_PATHLEN], log[RP_REPORT_PATHLEN], prog[RP_REPORT_PATHLEN];
    rp_pathf(script, sizeof script, "%s/plots.gp", dir);
    rp_pathf(log, sizeof log, "%s/.gnuplot.log.%ld", dir, (long)getpid());
    st = rp_sb_write(&b, script, err);
    rp_sb_free(&b);
    if (st != RP_OK) return st;
    int any = 0;
    for (int k = 0; k < out->n; k++) any |= out->p[k].written;
    const char *skip_all = NULL;
    char reason[256] = "";
    if (!any) {
        /* nothing to draw: no need for gnuplot */
    } else if (!find_gnuplot(prog, sizeof prog)) {
        skip_all = "gnuplot not found (install gnuplot-nox, or set REPRO_GNUPLOT)";
    } else {
        const int rc = run_gnuplot(prog, dir, "plots.gp", log);
        out->gnuplot = 1;
        if (rc != 0) {
            log_reason(log, reason, sizeof reason);
            if (rc == 127) snprintf(reason, sizeof reason, "gnuplot (%.180s) could not be started", prog);
        }
    }
    unlink(log);
    for (int k = 0; k < out->n; k++) {
        rp_plot *p = &out->p[k];
        if (!p->written) continue;
        char svg[RP_REPORT_PATHLEN], png[RP_REPORT_PATHLEN];
        rp_pathf(svg, sizeof svg, "%s/%s.svg.part", dir, p->name);
        rp_pathf(png, sizeof png, "%s/%s.png.part", dir, p->name);
        if (skip_all || !rp_is_file(svg) || !rp_is_file(png)) {
            p->written = 0;
            snprintf(p->reason, sizeof p->reason, "%s",
                     skip_all ? skip_all : reason[0] ? reason : "gnuplot wrote no output for it");
            unlink(svg);
            unlink(png);
            continue;
        }
        st = publish(dir, p->name, "svg", err);
        if (st == RP_OK) st = publish(dir, p->name, "png", err);
        if (st != RP_OK) return st;
        snprintf(p->svg, sizeof p->svg, "plots/%s.svg", p->name);
        snprintf(p->png, sizeof p->png, "plots/%s.png", p->name);
    }
    return RP_OK;
}
