/* html.c — report.html: one self-contained page a person reads.
 *
 * Layout, top to bottom: the verdict overview (counts per class, red first, and
 * a proportional bar), the failing cases with their evidence, a grid over the
 * two config axes with the most values (each cell's cases as verdict chips),
 * the plots, a table of every case, then one panel per case (failing ones
 * open): reference, candidate and diff heatmap per image as small multiples,
 * the metrics, the first failing layer and step, the per-step error plot with
 * the rounding envelope, a history sparkline, the environment and the config.
 *
 * Self-contained: images are data: URIs, each distinct image once, as a CSS
 * class (a reference shared by many cases is not repeated); plots are gnuplot
 * SVGs as data: URIs; no external font, script or style. A short inline
 * script only checks that every image decoded and logs to the console when
 * one did not (the screenshot test reads the console). Images larger than
 * THUMB pixels on a side are shown as thumbnails written to images/ (box
 * filter; heatmaps max-pooled so a single changed pixel stays visible). */
#include "reports/report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/image.h"
#include "harness/metrics/metrics.h"
#include "harness/store/store.h"
#include "reports/rutil.h"

#define THUMB 256        /* largest side embedded as is */
#define MAX_ITEMS_SHOWN 4
#define CELL_PX 150      /* displayed image width */

/* ---- the inline image registry -------------------------------------------------------- */

typedef struct img_ent {
    char key[RP_REPORT_PATHLEN]; /* what the image is (a file path or "diff:<a>|<b>") */
    int w, h;                    /* of the embedded image */
    int scale;                   /* heatmaps: the largest difference, in levels */
    int ok;
} img_ent;

typedef struct img_reg {
    int n, cap;
    img_ent *e;
    rp_sb css;                   /* .iK{background-image:url(data:...)} per image */
    const char *out_dir;         /* images/ is under it */
    int n_files;                 /* thumbnails and heatmaps written */
} img_reg;

/* Frees the registry's entries and CSS (not the files written). */
static void reg_free(img_reg *g) {
    free(g->e);
    rp_sb_free(&g->css);
}

/* Box-filters (or max-pools) rgb (H, W, 3) by an integer factor; malloc'd. */
static uint8_t *shrink(const uint8_t *rgb, int W, int H, int f, int use_max, int *ow, int *oh) {
    const int w = (W + f - 1) / f, h = (H + f - 1) / f;
    uint8_t *o = malloc((size_t)w * h * 3);
    if (!o) return NULL;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                unsigned acc = 0, cnt = 0;
                for (int dy = 0; dy < f && y * f + dy < H; dy++)
                    for (int dx = 0; dx < f && x * f + dx < W; dx++) {
                        const unsigned v = rgb[((size_t)(y * f + dy) * W + (x * f + dx)) * 3 + c];
                        if (use_max) acc = v > acc ? v : acc;
                        else acc += v;
                        cnt++;
                    }
                o[((size_t)y * w + x) * 3 + c] = (uint8_t)(use_max ? acc : (acc + cnt / 2) / cnt);
            }
    *ow = w;
    *oh = h;
    return o;
}

/* Embeds the PNG file at path as class index k. */
static int reg_embed_file(img_reg *g, int k, const char *path) {
    char *d = NULL;
    size_t n = 0;
    rp_error e;
    if (rp_read_file(path, SIZE_MAX, "an image", &d, &n, &e) != RP_OK) return 0;
    rp_sb_printf(&g->css, ".i%d{background-image:url(data:image/png;base64,", k);
    rp_sb_base64(&g->css, (const uint8_t *)d, n);
    rp_sb_puts(&g->css, ")}\n");
    free(d);
    return 1;
}

/* Writes rgb to images/<name> and embeds it as class k. */
static int reg_embed_pixels(img_reg *g, int k, const uint8_t *rgb, int W, int H, const char *name) {
    char dir[RP_REPORT_PATHLEN], path[RP_REPORT_PATHLEN];
    rp_error e;
    if (rp_pathf(dir, sizeof dir, "%s/images", g->out_dir) || rp_store_mkdirs(dir, &e) != RP_OK ||
        rp_pathf(path, sizeof path, "%s/%s", dir, name) || rp_png_write(path, rgb, W, H, &e) != RP_OK)
        return 0;
    g->n_files++;
    return reg_embed_file(g, k, path);
}

/* A new registry entry for key, or the existing one; *fresh = 1 when new. */
static int reg_slot(img_reg *g, const char *key, int *fresh) {
    *fresh = 0;
    for (int k = 0; k < g->n; k++)
        if (!strcmp(g->e[k].key, key)) return k;
    if (g->n == g->cap) {
        const int cap = g->cap ? g->cap * 2 : 32;
        img_ent *q = realloc(g->e, sizeof *q * (size_t)cap);
        if (!q) return -1;
        g->e = q;
        g->cap = cap;
    }
    img_ent *en = &g->e[g->n];
    memset(en, 0, sizeof *en);
    snprintf(en->key, sizeof en->key, "%s", key);
    *fresh = 1;
    return g->n++;
}

/* The class index of the image file at path (embedded once; a thumbnail when
 * large); -1 when it cannot be read. */
static int reg_image(img_reg *g, const char *path) {
    int fresh;
    const int k = reg_slot(g, path, &fresh);
    if (k < 0 || !fresh) return k >= 0 && g->e[k].ok ? k : -1;
    uint8_t *rgb = NULL;
    int W, H;
    rp_error e;
    if (rp_png_read(path, &rgb, &W, &H, &e) != RP_OK) return -1;
    img_ent *en = &g->e[k];
    if (W <= THUMB && H <= THUMB) {
        en->w = W;
        en->h = H;
        en->ok = reg_embed_file(g, k, path);
    } else {
        const int f = ((W > H ? W : H) + THUMB - 1) / THUMB;
        int w, h;
        uint8_t *t = shrink(rgb, W, H, f, 0, &w, &h);
        char name[64];
        snprintf(name, sizeof name, "thumb-%d.png", k);
        if (t) {
            en->w = w;
            en->h = h;
            en->ok = reg_embed_pixels(g, k, t, w, h, name);
        }
        free(t);
    }
    free(rgb);
    return en->ok ? k : -1;
}

/* The heatmap of candidate b against reference a, written to images/<name>
 * (full size) and embedded (max-pooled when large). *scale gets the largest
 * difference in levels. -1 when the images cannot be read or differ in size. */
static int reg_heatmap(img_reg *g, const char *a, const char *b, const char *name, int *scale) {
    char key[RP_REPORT_PATHLEN];
    if (rp_pathf(key, sizeof key, "diff:%s|%s", a, b)) return -1;
    int fresh;
    const int k = reg_slot(g, key, &fresh);
    if (k < 0) return -1;
    img_ent *en = &g->e[k];
    if (!fresh) {
        *scale = en->scale;
        return en->ok ? k : -1;
    }
    uint8_t *pa = NULL, *pb = NULL, *hm = NULL;
    int Wa, Ha, Wb, Hb;
    rp_error e;
    int ok = rp_png_read(a, &pa, &Wa, &Ha, &e) == RP_OK && rp_png_read(b, &pb, &Wb, &Hb, &e) == RP_OK && Wa == Wb &&
             Ha == Hb;
    if (ok) hm = malloc((size_t)Wa * Ha * 3);
    if (ok && hm) {
        *scale = en->scale = rp_diff_heatmap(pa, pb, Wa, Ha, hm);
        char dir[RP_REPORT_PATHLEN], path[RP_REPORT_PATHLEN];
        ok = !rp_pathf(dir, sizeof dir, "%s/images", g->out_dir) && rp_store_mkdirs(dir, &e) == RP_OK &&
             !rp_pathf(path, sizeof path, "%s/%s", dir, name) && rp_png_write(path, hm, Wa, Ha, &e) == RP_OK;
        if (ok) g->n_files++;
        if (ok && Wa <= THUMB && Ha <= THUMB) {
            en->w = Wa;
            en->h = Ha;
            ok = reg_embed_file(g, k, path);
        } else if (ok) {
            const int f = ((Wa > Ha ? Wa : Ha) + THUMB - 1) / THUMB;
            int w = 0, h = 0;
            uint8_t *t = shrink(hm, Wa, Ha, f, 1, &w, &h);
            char tn[96];
            snprintf(tn, sizeof tn, "thumb-%d.png", k);
            ok = t && reg_embed_pixels(g, k, t, w, h, tn);
            en->w = w;
            en->h = h;
            free(t);
        }
    } else {
        ok = 0;
    }
    free(pa);
    free(pb);
    free(hm);
    en->ok = ok;
    return ok ? k : -1;
}

/* ---- pieces ------------------------------------------------------------------------------- */

/* The CSS colour class of a verdict class. */
static const char *tone_class(int verdict) {
    switch (rp_rclass_tone(verdict)) {
    case RP_TONE_RED: return "red";
    case RP_TONE_AMBER: return "amber";
    case RP_TONE_GREEN: return "green";
    case RP_TONE_GREY: return "grey";
    default: return "blue";
    }
}

/* A coloured verdict label. */
static void chip(rp_sb *b, int verdict) {
    rp_sb_printf(b, "<span class=\"chip %s\">%s</span>", tone_class(verdict), rp_rclass_name(verdict));
}

/* The anchor of a case's panel. */
static void anchor(rp_sb *b, const rp_rcase *c) {
    rp_sb_puts(b, "c-");
    rp_sb_html(b, c->matrix);
    rp_sb_puts(b, "-");
    rp_sb_html(b, c->id);
}

static const char CSS[] =
    ":root{--red:#c62828;--red-bg:#fdecea;--amber:#b45f06;--amber-bg:#fff3e0;--green:#2e7d32;"
    "--green-bg:#e8f5e9;--grey:#6b6b6b;--grey-bg:#eeeeee;--blue:#1f5fa8;--blue-bg:#e6f0fb;--line:#e2e5e9}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif;"
    "color:#1c2024;background:#f4f5f7}\n"
    "header{background:#1d2733;color:#fff;padding:18px 32px 16px}\n"
    "header h1{margin:0;font-size:22px;font-weight:650;letter-spacing:.2px}\n"
    "header .sub{margin-top:4px;color:#b8c2cc;font-size:13px}\n"
    "header .sub b{color:#fff;font-weight:600}\n"
    "main{max-width:1240px;margin:0 auto;padding:8px 28px 40px}\n"
    "section{background:#fff;border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}\n"
    "h2{font-size:16px;margin:0 0 12px;color:#27313b}\n"
    "h3{font-size:13px;margin:14px 0 6px;color:#4a5560;text-transform:uppercase;letter-spacing:.5px}\n"
    ".headline{font-size:20px;font-weight:650;margin-bottom:12px}\n"
    ".headline.red{color:var(--red)}.headline.green{color:var(--green)}.headline.blue{color:var(--blue)}\n"
    ".bar{display:flex;height:14px;border-radius:7px;overflow:hidden;margin:4px 0 14px;background:#eee}\n"
    ".bar span{display:block;height:100%}\n"
    ".cards{display:flex;flex-wrap:wrap;gap:10px}\n"
    ".card{min-width:118px;padding:8px 14px;border-radius:6px;border-left:6px solid;background:#fafafa}\n"
    ".card .n{font-size:26px;font-weight:700;line-height:1.1}\n"
    ".card .l{font-size:12px;font-weight:600;letter-spacing:.3px}\n"
    ".card.red{border-color:var(--red);background:var(--red-bg);color:var(--red)}\n"
    ".card.amber{border-color:var(--amber);background:var(--amber-bg);color:var(--amber)}\n"
    ".card.green{border-color:var(--green);background:var(--green-bg);color:var(--green)}\n"
    ".card.grey{border-color:var(--grey);background:var(--grey-bg);color:var(--grey)}\n"
    ".card.blue{border-color:var(--blue);background:var(--blue-bg);color:var(--blue)}\n"
    ".fill.red{background:var(--red)}.fill.amber{background:#ef9a2d}.fill.green{background:#43a047}"
    ".fill.grey{background:#9e9e9e}.fill.blue{background:#5b8fd0}\n"
    ".chip{display:inline-block;padding:1px 8px;border-radius:10px;font-size:11.5px;font-weight:650;"
    "color:#fff;white-space:nowrap;letter-spacing:.2px;text-decoration:none}\n"
    ".chip.red{background:var(--red)}.chip.amber{background:#e08600}.chip.green{background:var(--green)}"
    ".chip.grey{background:#8a8a8a}.chip.blue{background:var(--blue)}\n"
    "a{color:#1f5fa8;text-decoration:none}a:hover{text-decoration:underline}\n"
    "table{border-collapse:collapse;width:100%}\n"
    "th{font-size:12px;text-align:left;color:#55606b;font-weight:600;border-bottom:2px solid var(--line);"
    "padding:5px 8px;white-space:nowrap}\n"
    "td{padding:5px 8px;border-bottom:1px solid #eef0f2;vertical-align:top}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "tr.fail td{background:#fff8f7}\n"
    ".mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}\n"
    ".muted{color:#6b7580}\n"
    ".grid{width:auto}\n"
    ".grid th.row{text-align:right;border-bottom:1px solid #eef0f2;border-right:2px solid var(--line)}\n"
    ".grid td{min-width:120px;text-align:center;border:1px solid #fff;border-radius:4px}\n"
    ".grid td.red{background:var(--red-bg)}.grid td.amber{background:var(--amber-bg)}"
    ".grid td.green{background:var(--green-bg)}.grid td.grey{background:var(--grey-bg)}"
    ".grid td.blue{background:var(--blue-bg)}.grid td.none{background:#fafafa;color:#bbb}\n"
    ".grid .chip{margin:1px}\n"
    ".plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:12px}\n"
    ".plots figure,.stepplot{margin:0}\n"
    ".plots img,.stepplot img{width:100%;height:auto;border:1px solid var(--line);border-radius:4px;"
    "background:#fff}\n"
    "figcaption{font-size:12px;color:#6b7580;margin-top:2px}\n"
    "details.case{border:1px solid var(--line);border-left:6px solid;border-radius:6px;margin:10px 0;"
    "background:#fff}\n"
    "details.case.red{border-left-color:var(--red)}details.case.amber{border-left-color:#e08600}"
    "details.case.green{border-left-color:var(--green)}details.case.grey{border-left-color:#9e9e9e}"
    "details.case.blue{border-left-color:var(--blue)}\n"
    "details.case>summary{cursor:pointer;padding:8px 12px;list-style-position:inside}\n"
    "details.case>summary .nm{font-weight:650;margin:0 6px}\n"
    "details.case>summary .ev{display:block;margin:2px 0 0 22px;color:#4a5560;font-size:13px}\n"
    ".body{display:flex;flex-wrap:wrap;gap:18px;padding:4px 14px 14px}\n"
    ".col{flex:1 1 420px;min-width:0}\n"
    ".imgs{display:grid;grid-template-columns:repeat(3," "150px);gap:6px 8px;align-items:start}\n"
    ".imgs .hd{font-size:11.5px;font-weight:650;color:#55606b;text-transform:uppercase;letter-spacing:.4px}\n"
    ".im{width:150px;background-size:100% 100%;background-repeat:no-repeat;image-rendering:pixelated;"
    "border:1px solid #d6d9dd;border-radius:3px;background-color:#f0f0f0}\n"
    ".cap{font-size:11px;color:#6b7580;margin-top:-2px}\n"
    ".kv td:first-child{color:#55606b;white-space:nowrap;width:1%}\n"
    ".evbox{border-left:3px solid #ccc;padding:6px 10px;background:#fafbfc;margin:6px 0;font-size:13px}\n"
    ".evbox.red{border-left-color:var(--red);background:var(--red-bg)}\n"
    ".evbox.amber{border-left-color:#e08600;background:var(--amber-bg)}\n"
    "pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fa;border:1px solid var(--line);"
    "border-radius:4px;padding:8px;font-size:11.5px;max-height:320px;overflow:auto}\n"
    "details.more>summary{cursor:pointer;color:#1f5fa8;font-size:12.5px;margin:6px 0}\n"
    "tr.diff td{background:#fff3e0}\n"
    ".spark{vertical-align:middle}\n"
    "footer{color:#7b8590;font-size:12px;text-align:center;padding:10px 0 30px}\n";

/* Whether the run was compared against another run. */
static int is_compare(const rp_run *r) { return !strcmp(r->kind, "compare"); }

/* The dark title bar: what was run, where it came from. */
static void header(rp_sb *b, const rp_run *r) {
    rp_sb_puts(b, "<header><h1>repro report &mdash; ");
    rp_sb_html(b, r->title);
    rp_sb_puts(b, "</h1><div class=\"sub\">");
    rp_sb_printf(b, "<b>%d</b> cases", r->n);
    if (r->git[0]) {
        rp_sb_puts(b, " &middot; git <b>");
        rp_sb_html(b, r->git);
        rp_sb_puts(b, "</b>");
    }
    if (r->engine[0]) {
        rp_sb_puts(b, " &middot; engine ");
        rp_sb_html(b, r->engine);
    }
    if (r->finished_at[0]) {
        rp_sb_puts(b, " &middot; finished ");
        rp_sb_html(b, r->finished_at);
    }
    rp_sb_puts(b, " &middot; ");
    if (is_compare(r)) {
        rp_sb_puts(b, "A = <span class=\"mono\">");
        rp_sb_html(b, r->source[0]);
        rp_sb_puts(b, "</span>, B = <span class=\"mono\">");
        rp_sb_html(b, r->source[1]);
        rp_sb_puts(b, "</span>");
    } else {
        rp_sb_puts(b, "from <span class=\"mono\">");
        rp_sb_html(b, r->source[0]);
        rp_sb_puts(b, "</span>");
    }
    rp_sb_puts(b, "</div></header>\n");
}

/* The headline, a bar proportional to the counts and a card per class present, red first. */
static void overview(rp_sb *b, const rp_run *r) {
    int counts[RP_RC_COUNT] = {0}, failing = 0, unclassified = 0;
    for (int i = 0; i < r->n; i++) {
        counts[r->cases[i].verdict]++;
        failing += !r->cases[i].pass;
        unclassified += !r->cases[i].classified && r->cases[i].verdict == RP_RC_UNCLASSIFIED;
    }
    rp_sb_puts(b, "<section id=\"overview\"><h2>Verdicts</h2>");
    if (failing)
        rp_sb_printf(b, "<div class=\"headline red\">%d of %d case%s failing</div>", failing, r->n, r->n == 1 ? "" : "s");
    else if (unclassified)
        rp_sb_printf(b, "<div class=\"headline blue\">No failures; %d case%s not classified yet</div>", unclassified,
                     unclassified == 1 ? "" : "s");
    else
        rp_sb_printf(b, "<div class=\"headline green\">All %d case%s pass</div>", r->n, r->n == 1 ? "" : "s");
    const int *ord = rp_rclass_order();
    rp_sb_puts(b, "<div class=\"bar\">");
    for (int k = 0; k < RP_RC_COUNT; k++) {
        const int v = ord[k];
        if (!counts[v]) continue;
        rp_sb_printf(b, "<span class=\"fill %s\" style=\"width:%.3f%%\" title=\"%s: %d\"></span>", tone_class(v),
                     100.0 * counts[v] / r->n, rp_rclass_name(v), counts[v]);
    }
    rp_sb_puts(b, "</div><div class=\"cards\">");
    for (int k = 0; k < RP_RC_COUNT; k++) {
        const int v = ord[k];
        if (!counts[v]) continue;
        rp_sb_printf(b, "<div class=\"card %s\"><div class=\"n\">%d</div><div class=\"l\">%s</div></div>",
                     tone_class(v), counts[v], rp_rclass_name(v));
    }
    rp_sb_puts(b, "</div></section>\n");
}

/* Case indices sorted red first (class rank, then store order). */
static int *red_first(const rp_run *r) {
    int *ix = malloc(sizeof *ix * (size_t)(r->n ? r->n : 1));
    if (!ix) return NULL;
    int n = 0;
    for (int k = 0; k < RP_RC_COUNT; k++)
        for (int i = 0; i < r->n; i++)
            if (r->cases[i].verdict == rp_rclass_order()[k] && !r->cases[i].pass) ix[n++] = i;
    for (int k = 0; k < RP_RC_COUNT; k++)
        for (int i = 0; i < r->n; i++)
            if (r->cases[i].verdict == rp_rclass_order()[k] && r->cases[i].pass) ix[n++] = i;
    return ix;
}

/* The case's name linking to its panel. */
static void case_link(rp_sb *b, const rp_rcase *c) {
    rp_sb_puts(b, "<a href=\"#");
    anchor(b, c);
    rp_sb_puts(b, "\">");
    rp_sb_html(b, c->name[0] ? c->name : c->id);
    rp_sb_puts(b, "</a>");
}

/* The failing cases, red first, with their evidence; nothing when none fails. */
static void failing_table(rp_sb *b, const rp_run *r, const int *ix) {
    int nf = 0;
    for (int i = 0; i < r->n; i++) nf += !r->cases[i].pass;
    if (!nf) return;
    rp_sb_printf(b, "<section id=\"failing\"><h2>Failing cases (%d)</h2><table><tr><th>verdict</th><th>case</th>"
                    "<th>degrees</th><th>evidence</th></tr>", nf);
    for (int k = 0; k < r->n; k++) {
        const rp_rcase *c = &r->cases[ix[k]];
        if (c->pass) continue;
        rp_sb_puts(b, "<tr><td>");
        chip(b, c->verdict);
        rp_sb_puts(b, "</td><td>");
        case_link(b, c);
        rp_sb_puts(b, "<div class=\"mono muted\">");
        rp_sb_html(b, c->id);
        rp_sb_puts(b, "</div></td><td class=\"mono\">");
        rp_sb_html(b, c->degrees);
        rp_sb_puts(b, "</td><td>");
        rp_sb_html(b, c->evidence);
        rp_sb_puts(b, "</td></tr>");
    }
    rp_sb_puts(b, "</table></section>\n");
}

/* The worst (lowest rank) verdict of the cases in a cell; -1 none. */
static int worst_of(const rp_run *r, const int *in, int n) {
    int w = -1;
    for (int k = 0; k < n; k++) {
        const int v = r->cases[in[k]].verdict;
        if (w < 0 || rp_rclass_rank(v) < rp_rclass_rank(w)) w = v;
    }
    return w;
}

/* A chip per case of a grid cell, linking to the case, the evidence as tooltip. */
static void cell_chips(rp_sb *b, const rp_run *r, const int *in, int n) {
    for (int k = 0; k < n; k++) {
        const rp_rcase *c = &r->cases[in[k]];
        rp_sb_printf(b, "<a class=\"chip %s\" href=\"#", tone_class(c->verdict));
        anchor(b, c);
        rp_sb_puts(b, "\" title=\"");
        rp_sb_html(b, c->name);
        rp_sb_puts(b, ": ");
        rp_sb_html(b, c->evidence);
        rp_sb_printf(b, "\">%s</a>", rp_rclass_name(c->verdict));
    }
}

/* A grid rows = axis a, columns = axis b (b NULL: one column). */
static void grid(rp_sb *b, const rp_run *r, const char *ax, const char *bx) {
    int na = 0, nb = 1;
    char (*va)[RP_AXIS_VALUE_LEN] = rp_run_axis_values(r, ax, &na);
    char (*vb)[RP_AXIS_VALUE_LEN] = bx ? rp_run_axis_values(r, bx, &nb) : NULL;
    int *in = malloc(sizeof *in * (size_t)(r->n ? r->n : 1));
    if (!va || (bx && !vb) || !in) goto out;
    rp_sb_puts(b, "<h3>");
    rp_sb_html(b, ax);
    if (bx) {
        rp_sb_puts(b, " &times; ");
        rp_sb_html(b, bx);
    }
    rp_sb_puts(b, "</h3><table class=\"grid\"><tr><th class=\"row\">");
    rp_sb_html(b, ax);
    if (bx) {
        rp_sb_puts(b, " \\ ");
        rp_sb_html(b, bx);
    }
    rp_sb_puts(b, "</th>");
    for (int j = 0; j < nb; j++) {
        rp_sb_puts(b, "<th>");
        rp_sb_html(b, bx ? vb[j] : "cases");
        rp_sb_puts(b, "</th>");
    }
    rp_sb_puts(b, "</tr>");
    for (int i = 0; i < na; i++) {
        rp_sb_puts(b, "<tr><th class=\"row mono\">");
        rp_sb_html(b, va[i]);
        rp_sb_puts(b, "</th>");
        for (int j = 0; j < nb; j++) {
            int n = 0;
            for (int k = 0; k < r->n; k++) {
                char s[RP_AXIS_VALUE_LEN], t[RP_AXIS_VALUE_LEN];
                rp_rcase_axis_value(&r->cases[k], ax, s, sizeof s);
                if (strcmp(s, va[i])) continue;
                if (bx) {
                    rp_rcase_axis_value(&r->cases[k], bx, t, sizeof t);
                    if (strcmp(t, vb[j])) continue;
                }
                in[n++] = k;
            }
            const int w = worst_of(r, in, n);
            rp_sb_printf(b, "<td class=\"%s\">", w < 0 ? "none" : tone_class(w));
            if (n) cell_chips(b, r, in, n);
            else rp_sb_puts(b, "&ndash;");
            rp_sb_puts(b, "</td>");
        }
        rp_sb_puts(b, "</tr>");
    }
    rp_sb_puts(b, "</table>");
out:
    free(va);
    free(vb);
    free(in);
}

/* The grid over the two config axes with the most values (none when nothing varies). */
static void axes_section(rp_sb *b, const rp_run *r) {
    char axes[2][RP_AXIS_LEN];
    const int n = rp_run_axes(r, axes, 2);
    if (!n) return;
    rp_sb_puts(b, "<section id=\"axes\"><h2>By configuration</h2>"
                  "<div class=\"muted\" style=\"margin-top:-8px\">Cells list their cases; the cell takes the "
                  "colour of its worst verdict. Hover a chip for the evidence, click it for the case.</div>");
    grid(b, r, axes[0], n > 1 ? axes[1] : NULL);
    rp_sb_puts(b, "</section>\n");
}

/* A plot file (relative to out_dir) as an <img> with an SVG data URI. */
static int plot_img(rp_sb *b, const char *out_dir, const rp_plot *p) {
    char path[RP_REPORT_PATHLEN];
    char *d = NULL;
    size_t n = 0;
    rp_error e;
    if (!p || !p->written || rp_pathf(path, sizeof path, "%s/%s", out_dir, p->svg) ||
        rp_read_file(path, SIZE_MAX, "a plot", &d, &n, &e) != RP_OK)
        return 0;
    rp_sb_puts(b, "<img alt=\"");
    rp_sb_html(b, p->title);
    rp_sb_puts(b, "\" src=\"data:image/svg+xml;base64,");
    rp_sb_base64(b, (const uint8_t *)d, n);
    rp_sb_puts(b, "\">");
    free(d);
    return 1;
}

/* The run's plots (per-case ones go with their cases), then the skipped ones with why. */
static void plots_section(rp_sb *b, const rp_run *r, const rp_html_opts *o) {
    if (!o->plots) return;
    rp_sb_puts(b, "<section id=\"plots\"><h2>Plots</h2><div class=\"plots\">");
    int skipped = 0, case_plots = 0;
    for (int k = 0; k < o->plots->n; k++) {
        const rp_plot *p = &o->plots->p[k];
        if (p->case_id[0]) {
            case_plots += p->written;
            continue;
        }
        if (!p->written) {
            skipped++;
            continue;
        }
        rp_sb_puts(b, "<figure>");
        plot_img(b, o->out_dir, p);
        rp_sb_puts(b, "<figcaption>");
        rp_sb_html(b, p->title);
        rp_sb_puts(b, " &middot; <span class=\"mono\">");
        rp_sb_html(b, p->svg);
        rp_sb_puts(b, "</span></figcaption></figure>");
    }
    rp_sb_puts(b, "</div>");
    if (skipped) {
        rp_sb_puts(b, "<h3>Skipped</h3><ul>");
        for (int k = 0; k < o->plots->n; k++) {
            const rp_plot *p = &o->plots->p[k];
            if (p->case_id[0] || p->written) continue;
            rp_sb_puts(b, "<li>");
            rp_sb_html(b, p->title);
            rp_sb_puts(b, ": <span class=\"muted\">");
            rp_sb_html(b, p->reason);
            rp_sb_puts(b, "</span></li>");
        }
        rp_sb_puts(b, "</ul>");
    }
    if (case_plots) rp_sb_printf(b, "<div class=\"muted\">%d per-step error plots are with their cases below.</div>", case_plots);
    rp_sb_puts(b, "</section>\n");
}

/* Every case in store order with its worst-image metrics. */
static void all_cases_table(rp_sb *b, const rp_run *r) {
    rp_sb_puts(b, "<section id=\"cases-table\"><h2>All cases</h2><table><tr><th>verdict</th><th>case</th>"
                  "<th>id</th><th>degrees</th><th class=\"num\">PSNR</th><th class=\"num\">SSIM</th>"
                  "<th class=\"num\">changed</th><th class=\"num\">latents max-abs</th><th class=\"num\">wall</th></tr>");
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        char ps[32], ss[32], ch[32], ma[32], wl[32];
        rp_fmt_psnr(rp_rcase_psnr(c), ps, sizeof ps);
        rp_fmt_ssim(rp_rcase_ssim(c), ss, sizeof ss);
        rp_fmt_pct(rp_rcase_changed(c), ch, sizeof ch);
        rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
        if (isnan(c->wall_s)) snprintf(wl, sizeof wl, "-");
        else snprintf(wl, sizeof wl, "%.1f s", c->wall_s);
        rp_sb_printf(b, "<tr%s><td>", c->pass ? "" : " class=\"fail\"");
        chip(b, c->verdict);
        rp_sb_puts(b, "</td><td>");
        case_link(b, c);
        if (c->is_ref) rp_sb_puts(b, " <span class=\"muted\">(reference)</span>");
        rp_sb_puts(b, "</td><td class=\"mono\">");
        rp_sb_html(b, c->id);
        rp_sb_puts(b, "</td><td class=\"mono\">");
        rp_sb_html(b, c->degrees);
        rp_sb_printf(b, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                        "<td class=\"num\">%s</td><td class=\"num\">%s</td></tr>", ps, ss, ch, ma, wl);
    }
    rp_sb_puts(b, "</table></section>\n");
}

/* An inline SVG sparkline of v (n points): a line, dots coloured by verdict
 * class when cls is given. log10 scale with logy (non-positive values skipped). */
static void svg_spark(rp_sb *b, const double *v, const int *cls, int n, int logy, int W, int H) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        const double y = logy ? (v[i] > 0 ? log10(v[i]) : NAN) : v[i];
        if (isfinite(y)) {
            lo = y < lo ? y : lo;
            hi = y > hi ? y : hi;
        }
    }
    rp_sb_printf(b, "<svg class=\"spark\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                    "xmlns=\"http://www.w3.org/2000/svg\">", W, H, W, H);
    if (!(hi >= lo)) {
        rp_sb_puts(b, "</svg>");
        return;
    }
    if (hi == lo) {
        hi += 0.5;
        lo -= 0.5;
    }
    const double pad = 4;
#define SX(i) (n > 1 ? pad + (W - 2 * pad) * (i) / (double)(n - 1) : W / 2.0)
#define SY(y) (pad + (H - 2 * pad) * (1 - ((y) - lo) / (hi - lo)))
    rp_sb_puts(b, "<polyline fill=\"none\" stroke=\"#6b7580\" stroke-width=\"1.3\" points=\"");
    for (int i = 0; i < n; i++) {
        const double y = logy ? (v[i] > 0 ? log10(v[i]) : NAN) : v[i];
        if (isfinite(y)) rp_sb_printf(b, "%.1f,%.1f ", SX(i), SY(y));
    }
    rp_sb_puts(b, "\"/>");
    static const char *const FILL[] = {"#c62828", "#e08600", "#1f5fa8", "#2e7d32", "#8a8a8a"};
    for (int i = 0; i < n; i++) {
        const double y = logy ? (v[i] > 0 ? log10(v[i]) : NAN) : v[i];
        const double yy = isfinite(y) ? SY(y) : H - pad;
        rp_sb_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.4\" fill=\"%s\"/>", SX(i), yy,
                     cls ? FILL[rp_rclass_tone(cls[i])] : "#1f5fa8");
    }
#undef SX
#undef SY
    rp_sb_puts(b, "</svg>");
}

/* The history of the case: PSNR (identical drawn at the top) with verdict-coloured dots. */
static void history_row(rp_sb *b, const rp_rcase *c, const char *db) {
    rp_hist_point *pts = NULL;
    int n = 0;
    rp_error e;
    rp_error_clear(&e);
    const char *metric = isnan(rp_rcase_psnr(c)) ? "max_abs" : "psnr";
    if (rp_history_trend(db, c->id, metric, 30, &pts, &n, NULL, &e) != RP_OK || n == 0) {
        rp_sb_puts(b, "<tr><td>history</td><td class=\"muted\">no earlier runs recorded</td></tr>");
        free(pts);
        return;
    }
    double *v = malloc(sizeof *v * (size_t)n);
    int *cls = malloc(sizeof *cls * (size_t)n);
    if (v && cls) {
        double mx = 0;
        for (int i = 0; i < n; i++)
            if (isfinite(pts[i].value) && pts[i].value > mx) mx = pts[i].value;
        for (int i = 0; i < n; i++) {
            v[i] = isinf(pts[i].value) ? mx + 10 : pts[i].value;
            const int k = rp_rclass_parse(pts[i].verdict);
            cls[i] = k < 0 ? RP_RC_PENDING : k;
        }
        rp_sb_printf(b, "<tr><td>history</td><td>");
        svg_spark(b, v, cls, n, !strcmp(metric, "max_abs"), 180, 30);
        rp_sb_printf(b, " <span class=\"muted\">%s over the last %d run%s (", metric, n, n == 1 ? "" : "s");
        rp_sb_html(b, pts[0].when);
        rp_sb_puts(b, " &rarr; ");
        rp_sb_html(b, pts[n - 1].when);
        rp_sb_puts(b, ")</span></td></tr>");
    }
    free(v);
    free(cls);
    free(pts);
}

/* The small multiples: per image, reference | candidate | difference. */
static void images_block(rp_sb *b, img_reg *g, const rp_rcase *c, int compare) {
    if (!c->dir[0] || c->n_images == 0) return;
    const int has_ref = c->ref_dir[0] != '\0';
    rp_sb_printf(b, "<div class=\"imgs\" style=\"grid-template-columns:repeat(%d,%dpx)\">", has_ref ? 3 : 1, CELL_PX);
    if (has_ref)
        rp_sb_printf(b, "<div class=\"hd\">%s</div><div class=\"hd\">%s</div><div class=\"hd\">difference</div>",
                     compare ? "run A" : "reference", compare ? "run B" : "candidate");
    else
        rp_sb_puts(b, "<div class=\"hd\">output</div>");
    const int shown = c->n_images < MAX_ITEMS_SHOWN ? c->n_images : MAX_ITEMS_SHOWN;
    for (int i = 0; i < shown; i++) {
        char pa[RP_REPORT_PATHLEN], pb[RP_REPORT_PATHLEN];
        rp_store_image_path(pb, sizeof pb, c->dir, i);
        rp_store_image_path(pa, sizeof pa, c->ref_dir, i);
        const int kb = reg_image(g, pb);
        const int ka = has_ref ? reg_image(g, pa) : -1;
        int scale = 0, kh = -1;
        if (has_ref && ka >= 0 && kb >= 0) {
            char name[160];
            snprintf(name, sizeof name, "%.40s-%.40s-%d-diff.png", c->matrix, c->id, i);
            for (char *s = name; *s; s++)
                if (*s == '/' || *s == ' ') *s = '_';
            kh = reg_heatmap(g, pa, pb, name, &scale);
        }
        const int cols[3] = {ka, kb, kh};
        for (int k = has_ref ? 0 : 1; k < (has_ref ? 3 : 2); k++) {
            const int ix = cols[k];
            if (ix < 0) {
                rp_sb_printf(b, "<div class=\"im\" style=\"height:%dpx\" title=\"missing\"></div>", CELL_PX);
                continue;
            }
            const int h = (int)lround((double)CELL_PX * g->e[ix].h / (g->e[ix].w ? g->e[ix].w : 1));
            rp_sb_printf(b, "<div class=\"im i%d\" style=\"height:%dpx\" role=\"img\" title=\"image %d\"></div>", ix, h, i);
        }
        if (has_ref) {
            rp_sb_printf(b, "<div class=\"cap\">image %d</div><div class=\"cap\"></div>", i);
            if (kh < 0) rp_sb_puts(b, "<div class=\"cap\">no heatmap</div>");
            else if (scale == 0) rp_sb_puts(b, "<div class=\"cap\">identical</div>");
            else rp_sb_printf(b, "<div class=\"cap\">max |&Delta;| %d level%s (black 0 &rarr; yellow %d)</div>", scale,
                              scale == 1 ? "" : "s", scale);
        } else {
            rp_sb_printf(b, "<div class=\"cap\">image %d</div>", i);
        }
    }
    rp_sb_puts(b, "</div>");
    if (c->n_images > shown)
        rp_sb_printf(b, "<div class=\"muted\">%d more image%s in the case directory</div>", c->n_images - shown,
                     c->n_images - shown == 1 ? "" : "s");
}

/* Flattens JSON into "a.b[0].c = value" rows. */
static void flatten(const cJSON *j, const char *prefix, void (*row)(void *, const char *, const char *), void *u) {
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, j) {
        char key[256];
        if (cJSON_IsArray(j)) snprintf(key, sizeof key, "%s[%d]", prefix, i);
        else snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", e->string ? e->string : "?");
        i++;
        if (cJSON_IsObject(e) || (cJSON_IsArray(e) && cJSON_GetArraySize(e) > 0)) {
            flatten(e, key, row, u);
            continue;
        }
        char val[512];
        if (cJSON_IsString(e)) snprintf(val, sizeof val, "%s", e->valuestring);
        else if (cJSON_IsNumber(e)) snprintf(val, sizeof val, "%.15g", e->valuedouble);
        else if (cJSON_IsBool(e)) snprintf(val, sizeof val, "%s", cJSON_IsTrue(e) ? "true" : "false");
        else if (cJSON_IsArray(e)) snprintf(val, sizeof val, "[]");
        else snprintf(val, sizeof val, "null");
        row(u, key, val);
    }
}

typedef struct env_ctx {
    rp_sb *b;
    const cJSON *other; /* compare: run A's env, for the second column */
} env_ctx;

/* The value at a flattened key of j ("" when absent). */
static void lookup_flat(const cJSON *j, const char *key, char *out, size_t cap);

/* One row of the environment table (a comparison: A's value too, differences tinted). */
static void env_row(void *u, const char *key, const char *val) {
    env_ctx *x = u;
    if (x->other) {
        char a[512];
        lookup_flat(x->other, key, a, sizeof a);
        rp_sb_printf(x->b, "<tr%s><td class=\"mono\">", strcmp(a, val) ? " class=\"diff\"" : "");
        rp_sb_html(x->b, key);
        rp_sb_puts(x->b, "</td><td class=\"mono\">");
        rp_sb_html(x->b, a);
        rp_sb_puts(x->b, "</td><td class=\"mono\">");
    } else {
        rp_sb_puts(x->b, "<tr><td class=\"mono\">");
        rp_sb_html(x->b, key);
        rp_sb_puts(x->b, "</td><td class=\"mono\">");
    }
    rp_sb_html(x->b, val);
    rp_sb_puts(x->b, "</td></tr>");
}

typedef struct find_ctx {
    const char *key;
    char *out;
    size_t cap;
} find_ctx;

/* flatten() visitor of lookup_flat. */
static void find_row(void *u, const char *key, const char *val) {
    find_ctx *f = u;
    if (!strcmp(f->key, key)) snprintf(f->out, f->cap, "%s", val);
}

static void lookup_flat(const cJSON *j, const char *key, char *out, size_t cap) {
    out[0] = '\0';
    find_ctx f = {key, out, cap};
    flatten(j, "", find_row, &f);
}

/* One line: host, CPU, BLAS core, GPU, compiler, git. */
static void env_line(rp_sb *b, const cJSON *env) {
    const cJSON *host = rp_j_get(env, "host"), *ob = rp_j_get(env, "openblas"), *bd = rp_j_get(env, "build");
    const cJSON *gpus = rp_j_get(env, "gpus");
    rp_sb_html(b, rp_j_str(host, "hostname", "?"));
    rp_sb_puts(b, " &middot; ");
    rp_sb_html(b, rp_j_str(host, "cpu_model", "?"));
    rp_sb_printf(b, " (%d cores) &middot; OpenBLAS ", (int)rp_j_num(host, "cpu_cores_online", 0));
    rp_sb_html(b, rp_j_str(ob, "core", "?"));
    rp_sb_puts(b, " &middot; ");
    if (cJSON_GetArraySize(gpus) > 0) {
        rp_sb_html(b, rp_j_str(cJSON_GetArrayItem(gpus, 0), "name", "GPU"));
        if (cJSON_GetArraySize(gpus) > 1) rp_sb_printf(b, " &times;%d", cJSON_GetArraySize(gpus));
    } else {
        rp_sb_puts(b, "no GPU");
    }
    rp_sb_puts(b, " &middot; ");
    rp_sb_html(b, rp_j_str(bd, "compiler", "?"));
    rp_sb_puts(b, " &middot; git ");
    rp_sb_html(b, rp_j_str(bd, "git_revision", "?"));
}

/* The environment row: one line per machine, the full record folded. */
static void env_block(rp_sb *b, const rp_rcase *c) {
    if (!c->env) {
        rp_sb_puts(b, "<tr><td>environment</td><td class=\"muted\">no env.json</td></tr>");
        return;
    }
    rp_sb_puts(b, "<tr><td>environment</td><td>");
    if (c->env_ref) {
        rp_sb_puts(b, "A: ");
        env_line(b, c->env_ref);
        rp_sb_puts(b, "<br>B: ");
    }
    env_line(b, c->env);
    rp_sb_puts(b, "<details class=\"more\"><summary>full environment</summary><table class=\"kv\">");
    if (c->env_ref) rp_sb_puts(b, "<tr><th>key</th><th>run A</th><th>run B</th></tr>");
    env_ctx x = {b, c->env_ref};
    flatten(c->env, "", env_row, &x);
    rp_sb_puts(b, "</table></details></td></tr>");
}

/* A value with its envelope and ratio: "1.62e-04 vs envelope 2.00e-07 (x812)". */
static void vs_envelope(rp_sb *b, const cJSON *o, const char *key) {
    char x[32], y[32];
    rp_fmt_sci(rp_j_num(o, key, NAN), x, sizeof x);
    rp_fmt_sci(rp_j_num(o, "envelope", NAN), y, sizeof y);
    rp_sb_printf(b, "%s vs envelope %s", x, y);
    const double ratio = rp_j_num(o, "ratio", NAN);
    if (!isnan(ratio)) rp_sb_printf(b, " (<b>&times;%.3g</b>)", ratio);
}

/* "<tr><td>label</td><td>" with the label escaped. */
static void row_open(rp_sb *b, const char *label) {
    rp_sb_puts(b, "<tr><td>");
    rp_sb_html(b, label);
    rp_sb_puts(b, "</td><td>");
}

/* The evidence members present (harness/analysis/verdict.h): first failing layer and
 * step, the worst layers, initial noise, approximation, assignment,
 * determinism, the envelope's twins, notes; then the verdict against a golden. */
static void evidence_rows(rp_sb *b, const rp_rcase *c) {
    const cJSON *ev = rp_j_get(c->classification, "evidence");
    char x[32], y[32], z[32];
    const cJSON *fl = rp_j_get(ev, "first_layer");
    if (fl) {
        row_open(b, "first failing layer");
        rp_sb_puts(b, "<b class=\"mono\">");
        rp_sb_html(b, rp_j_str(fl, "name", "?"));
        rp_sb_puts(b, "</b>");
        const double st = rp_j_num(fl, "step", NAN);
        if (!isnan(st)) rp_sb_printf(b, " (step %d)", (int)st);
        rp_sb_puts(b, ": relative error ");
        vs_envelope(b, fl, "rel");
        rp_sb_puts(b, "</td></tr>");
    }
    const cJSON *fs = rp_j_get(ev, "first_step");
    if (fs) {
        row_open(b, "first failing step");
        rp_sb_printf(b, "<b>step %d</b>", (int)rp_j_num(fs, "step", -1));
        const char *what = rp_j_str(fs, "what", "local error");
        rp_sb_puts(b, ": ");
        rp_sb_html(b, what);
        rp_sb_puts(b, " ");
        vs_envelope(b, fs, "local");
        rp_sb_puts(b, "</td></tr>");
    }
    /* the three layers furthest beyond the envelope */
    const cJSON *layers = rp_j_get(ev, "layers");
    if (cJSON_GetArraySize(layers) > 0) {
        const cJSON *top[3] = {NULL, NULL, NULL};
        const cJSON *e;
        cJSON_ArrayForEach(e, layers) {
            const double r = rp_j_num(e, "ratio", NAN);
            if (isnan(r)) continue;
            for (int k = 0; k < 3; k++)
                if (!top[k] || r > rp_j_num(top[k], "ratio", NAN)) {
                    for (int j = 2; j > k; j--) top[j] = top[j - 1];
                    top[k] = e;
                    break;
                }
        }
        if (top[0]) {
            row_open(b, "worst layers");
            for (int k = 0; k < 3 && top[k]; k++) {
                rp_sb_puts(b, k ? ", <span class=\"mono\">" : "<span class=\"mono\">");
                rp_sb_html(b, rp_j_str(top[k], "name", "?"));
                rp_sb_printf(b, "</span> &times;%.3g", rp_j_num(top[k], "ratio", NAN));
            }
            rp_sb_printf(b, " <span class=\"muted\">(of %d, relative to the envelope)</span></td></tr>",
                         cJSON_GetArraySize(layers));
        }
    }
    const cJSON *in = rp_j_get(ev, "initial_noise");
    if (in) {
        row_open(b, "initial noise");
        vs_envelope(b, in, "rel");
        rp_sb_puts(b, "</td></tr>");
    }
    const cJSON *ap = rp_j_get(ev, "approx");
    if (ap) {
        rp_fmt_psnr(rp_j_num(ap, "psnr", NAN), x, sizeof x);
        rp_fmt_psnr(rp_j_num(ap, "bound_psnr", NAN), y, sizeof y);
        rp_fmt_ssim(rp_j_num(ap, "ssim", NAN), z, sizeof z);
        char bs[32];
        rp_fmt_ssim(rp_j_num(ap, "bound_ssim", NAN), bs, sizeof bs);
        rp_sb_printf(b, "<tr><td>approximation</td><td>PSNR %s (bound %s), SSIM %s (bound %s), warmup %d%s</td></tr>",
                     x, y, z, bs, (int)rp_j_num(ap, "warmup", -1),
                     cJSON_IsFalse(rp_j_get(ap, "approximate")) ? " (exact layout)" : "");
    }
    const cJSON *as = rp_j_get(ev, "assignment");
    if (as) {
        row_open(b, "assignment");
        rp_sb_html(b, rp_j_str(as, "message", ""));
        const cJSON *perm = rp_j_get(as, "permutation");
        char *ps = perm ? cJSON_PrintUnformatted(perm) : NULL;
        if (ps) {
            rp_sb_puts(b, " <span class=\"mono\">permutation ");
            rp_sb_html(b, ps);
            rp_sb_puts(b, "</span>");
        }
        free(ps);
        rp_sb_puts(b, "</td></tr>");
    }
    const cJSON *de = rp_j_get(ev, "determinism");
    if (de) {
        rp_fmt_sci(rp_j_num(de, "max_abs", NAN), x, sizeof x);
        const cJSON *ri = rp_j_get(de, "repeats_identical");
        rp_sb_printf(b, "<tr><td>determinism</td><td>%d repeat%s%s, max-abs %s, leak check ",
                     (int)rp_j_num(de, "repeats", 0), (int)rp_j_num(de, "repeats", 0) == 1 ? "" : "s",
                     cJSON_IsBool(ri) ? (cJSON_IsTrue(ri) ? " identical" : " <b>differ</b>") : "", x);
        rp_sb_html(b, rp_j_str(de, "leak_check", "-"));
        const cJSON *pr = rp_j_get(de, "promised");
        if (cJSON_IsBool(pr)) rp_sb_puts(b, cJSON_IsTrue(pr) ? "; determinism promised" : "; not promised (fast mode)");
        rp_sb_puts(b, "</td></tr>");
    }
    const cJSON *env = rp_j_get(ev, "envelope");
    const cJSON *twins = rp_j_get(env, "twins");
    if (cJSON_GetArraySize(twins) > 0) {
        row_open(b, "envelope");
        rp_sb_printf(b, "%d of %d rounding twins ran", (int)rp_j_num(env, "twins_ok", 0), cJSON_GetArraySize(twins));
        const double f = rp_j_num(env, "factor", NAN);
        if (!isnan(f)) rp_sb_printf(b, "; a bug is beyond &times;%g the envelope", f);
        rp_sb_puts(b, " <span class=\"muted\">(");
        const cJSON *t;
        int k = 0;
        cJSON_ArrayForEach(t, twins) {
            rp_sb_puts(b, k++ ? ", " : "");
            rp_sb_html(b, rp_j_str(t, "name", "?"));
            const char *tst = rp_j_str(t, "status", "ok");
            if (strcmp(tst, "ok")) {
                rp_sb_puts(b, ": ");
                rp_sb_html(b, tst);
            }
        }
        rp_sb_puts(b, ")</span></td></tr>");
    }
    static const char *const NOTES[][2] = {{"exactness", "exactness"}, {"layers_note", "layers"},
                                           {"teacher_note", "local errors"}, {"attention_auto", "auto attention"}};
    for (int k = 0; k < 4; k++) {
        const char *v = rp_j_str(ev, NOTES[k][0], NULL);
        if (!v) continue;
        row_open(b, NOTES[k][1]);
        rp_sb_html(b, v);
        rp_sb_puts(b, "</td></tr>");
    }
    if (c->golden) {
        const int gv = rp_verdict_parse(rp_j_str(c->golden, "verdict", ""));
        row_open(b, "against the golden");
        if (gv >= 0) chip(b, gv);
        rp_sb_puts(b, " ");
        rp_sb_html(b, rp_j_str(c->golden, "summary", ""));
        rp_sb_puts(b, "</td></tr>");
    }
}

/* One case: summary line (open when failing), images, evidence, metrics, history,
 * environment, per-step errors, what happened, config. */
static void case_panel(rp_sb *b, img_reg *g, const rp_run *r, const rp_rcase *c, const rp_html_opts *o) {
    const char *tone = tone_class(c->verdict);
    rp_sb_printf(b, "<details class=\"case %s\" id=\"", tone);
    anchor(b, c);
    rp_sb_printf(b, "\"%s><summary>", c->pass ? "" : " open");
    chip(b, c->verdict);
    rp_sb_puts(b, "<span class=\"nm\">");
    rp_sb_html(b, c->name[0] ? c->name : c->id);
    rp_sb_puts(b, "</span><span class=\"mono muted\">");
    rp_sb_html(b, c->id);
    rp_sb_puts(b, " &middot; ");
    rp_sb_html(b, c->degrees[0] ? c->degrees : "?");
    rp_sb_puts(b, "</span>");
    if (!c->pass) rp_sb_puts(b, " <b style=\"color:var(--red)\">FAILING</b>");
    rp_sb_puts(b, "<span class=\"ev\">");
    rp_sb_html(b, c->evidence);
    rp_sb_puts(b, "</span></summary><div class=\"body\"><div class=\"col\" style=\"flex:0 1 auto\">");
    images_block(b, g, c, is_compare(r));
    if (!c->dir[0]) rp_sb_puts(b, "<div class=\"muted\">No outputs: the case has no result directory here.</div>");
    else if (!c->n_images) rp_sb_puts(b, "<div class=\"muted\">No images in the result directory.</div>");
    rp_sb_puts(b, "</div><div class=\"col\">");
    const int red = rp_rclass_tone(c->verdict) == RP_TONE_RED, amber = rp_rclass_tone(c->verdict) == RP_TONE_AMBER;
    rp_sb_printf(b, "<div class=\"evbox%s\"><b>%s</b>%s: ", red ? " red" : amber ? " amber" : "",
                 rp_rclass_name(c->verdict), is_compare(r) ? " (B against A)" : c->classified ? "" : " (provisional)");
    rp_sb_html(b, c->evidence);
    rp_sb_puts(b, "</div><table class=\"kv\">");
    evidence_rows(b, c);
    char ps[32], ss[32], ch[32], ma[32], rl[32];
    rp_fmt_psnr(rp_rcase_psnr(c), ps, sizeof ps);
    rp_fmt_ssim(rp_rcase_ssim(c), ss, sizeof ss);
    rp_fmt_pct(rp_rcase_changed(c), ch, sizeof ch);
    rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
    rp_fmt_sci(rp_rcase_rel_l2(c), rl, sizeof rl);
    if (rp_rcase_vs(c))
        rp_sb_printf(b, "<tr><td>metrics</td><td>worst image PSNR <b>%s</b>, SSIM <b>%s</b>, %s pixels changed; "
                        "latents max-abs %s, rel-L2 %s</td></tr>", ps, ss, ch, ma, rl);
    if (is_compare(r) && c->verdict_a[0])
        rp_sb_printf(b, "<tr><td>own verdicts</td><td>run A: %s &middot; run B: %s</td></tr>", c->verdict_a, c->verdict_b);
    rp_sb_puts(b, "<tr><td>compared with</td><td>");
    rp_sb_html(b, c->ref_label[0] ? c->ref_label : "nothing (no reference in this run)");
    if (c->ref_id[0] && strcmp(c->ref_id, c->id)) {
        rp_sb_puts(b, " <span class=\"mono muted\">");
        rp_sb_html(b, c->ref_id);
        rp_sb_puts(b, "</span>");
    }
    rp_sb_puts(b, "</td></tr>");
    if (c->expected[0]) {
        rp_sb_puts(b, "<tr><td>expected</td><td>");
        rp_sb_html(b, c->expected);
        rp_sb_puts(b, "</td></tr>");
    }
    if (o->history_db) history_row(b, c, o->history_db);
    if (!isnan(c->wall_s)) rp_sb_printf(b, "<tr><td>wall time</td><td>%.2f s</td></tr>", c->wall_s);
    env_block(b, c);
    rp_sb_puts(b, "</table>");
    /* the per-step errors: gnuplot's plot, else a sparkline of what there is */
    const rp_plot *sp = NULL;
    for (int k = 0; o->plots && k < o->plots->n && !sp; k++)
        if (!strcmp(o->plots->p[k].case_id, c->id)) sp = &o->plots->p[k];
    if (sp && sp->written) {
        rp_sb_puts(b, "<h3>Error per step</h3><figure class=\"stepplot\">");
        plot_img(b, o->out_dir, sp);
        rp_sb_puts(b, "</figure>");
    } else {
        int n = 0;
        double *acc = rp_rcase_series(c, "accumulated", &n);
        if (n > 1) {
            rp_sb_puts(b, "<h3>Error per step</h3>");
            svg_spark(b, acc, NULL, n, 1, 320, 60);
            rp_sb_printf(b, "<div class=\"muted\">accumulated relative L2 error over %d steps (log scale)%s", n,
                         sp ? "; plot skipped: " : "");
            if (sp) rp_sb_html(b, sp->reason);
            rp_sb_puts(b, "</div>");
        }
        free(acc);
    }
    const char *rep = rp_j_str(c->result, "report", "");
    if (rep[0]) {
        rp_sb_puts(b, "<h3>What happened</h3><pre>");
        rp_sb_html(b, rep);
        rp_sb_puts(b, "</pre>");
    }
    if (c->config) {
        char *s = cJSON_Print(c->config);
        if (s) {
            rp_sb_puts(b, "<details class=\"more\"><summary>config (case.json)</summary><pre>");
            rp_sb_html(b, s);
            rp_sb_puts(b, "</pre></details>");
        }
        free(s);
    }
    if (c->dir[0]) {
        rp_sb_puts(b, "<div class=\"muted mono\" style=\"margin-top:6px\">");
        rp_sb_html(b, c->dir);
        rp_sb_puts(b, "</div>");
    }
    rp_sb_puts(b, "</div></div></details>\n");
}

/* Logs to the console any inlined image that fails to decode; the page needs
 * no script to be read. */
static const char SELF_CHECK[] =
    "<script>\n"
    "(function () {\n"
    "  function bad(what) { console.error('repro-report: resource failed to load: ' + what); }\n"
    "  document.querySelectorAll('img').forEach(function (im) {\n"
    "    if (im.complete && im.naturalWidth === 0) bad(im.alt);\n"
    "    im.addEventListener('error', function () { bad(im.alt); });\n"
    "  });\n"
    "  for (var s = 0; s < document.styleSheets.length; s++) {\n"
    "    var rules = document.styleSheets[s].cssRules;\n"
    "    for (var i = 0; i < rules.length; i++) {\n"
    "      var bg = rules[i].style ? rules[i].style.backgroundImage : '';\n"
    "      if (!bg || bg.indexOf('data:') < 0) continue;\n"
    "      var im = new Image();\n"
    "      im.onerror = (function (sel) { return function () { bad(sel); }; })(rules[i].selectorText);\n"
    "      im.src = bg.slice(bg.indexOf('(') + 1, bg.lastIndexOf(')')).replace(/^\"|\"$/g, '');\n"
    "    }\n"
    "  }\n"
    "})();\n"
    "</script>\n";

rp_status rp_report_html(const rp_run *r, const rp_html_opts *o, const char *path, rp_error *err) {
    rp_sb b = {0};
    img_reg g;
    memset(&g, 0, sizeof g);
    g.out_dir = o->out_dir;
    int *ix = red_first(r);
    if (!ix) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    rp_sb_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<meta name=\"generator\" content=\"repro " REPRO_VERSION "\"><title>repro report: ");
    rp_sb_html(&b, r->title);
    rp_sb_puts(&b, "</title>\n<style>\n");
    rp_sb_puts(&b, CSS);
    rp_sb_puts(&b, "</style></head><body>\n");
    header(&b, r);
    rp_sb_puts(&b, "<main>\n");
    overview(&b, r);
    failing_table(&b, r, ix);
    axes_section(&b, r);
    plots_section(&b, r, o);
    all_cases_table(&b, r);
    rp_sb_printf(&b, "<section id=\"cases\"><h2>Cases</h2><div class=\"muted\" style=\"margin-top:-8px\">Red first; "
                     "failing cases are open. Difference: per pixel the largest channel difference, black (none) "
                     "to pale yellow (the largest in that image).</div>\n");
    for (int k = 0; k < r->n; k++) case_panel(&b, &g, r, &r->cases[ix[k]], o);
    rp_sb_puts(&b, "</section>\n</main>\n<footer>repro " REPRO_VERSION " &middot; report schema ");
    rp_sb_printf(&b, "%d &middot; self-contained: every image and plot is inlined</footer>\n", RP_REPORT_SCHEMA_VERSION);
    rp_sb_puts(&b, "<style>\n");
    rp_sb_putn(&b, g.css.p ? g.css.p : "", g.css.n);
    rp_sb_puts(&b, "</style>\n");
    rp_sb_puts(&b, SELF_CHECK);
    rp_sb_puts(&b, "</body></html>\n");
    if (g.css.oom) b.oom = 1;
    free(ix);
    reg_free(&g);
    rp_status st = rp_sb_write(&b, path, err);
    rp_sb_free(&b);
    return st;
}
