/* markdown.c — report.md: the overview as GitHub-flavoured Markdown, for CI
 * comments and terminals: verdict counts (red first), the failing cases with
 * their evidence, the grid over the two main axes, every case in one table
 * and the plots (written or skipped). No images: the HTML report has them. */
#include "reports/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/rutil.h"

/* A coloured marker per tone, readable in CI comments and UTF-8 terminals. */
static const char *mark(int verdict) {
    switch (rp_rclass_tone(verdict)) {
    case RP_TONE_RED: return "🔴";
    case RP_TONE_AMBER: return "🟠";
    case RP_TONE_GREEN: return "🟢";
    case RP_TONE_GREY: return "⚪";
    default: return "🔵";
    }
}

/* The grid over axes ax (rows) and bx (columns), a marker and verdict per case. */
static void grid(rp_sb *b, const rp_run *r, const char *ax, const char *bx) {
    int na = 0, nb = 0;
    char (*va)[RP_AXIS_VALUE_LEN] = rp_run_axis_values(r, ax, &na);
    char (*vb)[RP_AXIS_VALUE_LEN] = rp_run_axis_values(r, bx, &nb);
    if (!va || !vb) goto out;
    rp_sb_puts(b, "\n### ");
    rp_sb_md(b, ax);
    rp_sb_puts(b, " × ");
    rp_sb_md(b, bx);
    rp_sb_puts(b, "\n\n| ");
    rp_sb_md(b, ax);
    rp_sb_puts(b, " \\\\ ");
    rp_sb_md(b, bx);
    rp_sb_puts(b, " |");
    for (int j = 0; j < nb; j++) {
        rp_sb_puts(b, " ");
        rp_sb_md(b, vb[j]);
        rp_sb_puts(b, " |");
    }
    rp_sb_puts(b, "\n|---|");
    for (int j = 0; j < nb; j++) rp_sb_puts(b, "---|");
    rp_sb_puts(b, "\n");
    for (int i = 0; i < na; i++) {
        rp_sb_puts(b, "| **");
        rp_sb_md(b, va[i]);
        rp_sb_puts(b, "** |");
        for (int j = 0; j < nb; j++) {
            int n = 0;
            for (int k = 0; k < r->n; k++) {
                char s[RP_AXIS_VALUE_LEN], t[RP_AXIS_VALUE_LEN];
                rp_rcase_axis_value(&r->cases[k], ax, s, sizeof s);
                rp_rcase_axis_value(&r->cases[k], bx, t, sizeof t);
                if (strcmp(s, va[i]) || strcmp(t, vb[j])) continue;
                rp_sb_printf(b, "%s%s %s", n ? "<br>" : " ", mark(r->cases[k].verdict),
                             rp_rclass_name(r->cases[k].verdict));
                n++;
            }
            rp_sb_puts(b, n ? " |" : " – |");
        }
        rp_sb_puts(b, "\n");
    }
out:
    free(va);
    free(vb);
}

rp_status rp_report_markdown(const rp_run *r, const rp_plots *plots, const char *path, rp_error *err) {
    rp_sb b = {0};
    int counts[RP_RC_COUNT] = {0}, failing = 0;
    for (int i = 0; i < r->n; i++) {
        counts[r->cases[i].verdict]++;
        failing += !r->cases[i].pass;
    }
    rp_sb_puts(&b, "# repro report: ");
    rp_sb_md(&b, r->title);
    rp_sb_puts(&b, "\n\n");
    if (failing) rp_sb_printf(&b, "**%d of %d cases failing**", failing, r->n);
    else rp_sb_printf(&b, "**All %d cases pass**", r->n);
    if (r->git[0]) {
        rp_sb_puts(&b, " · git `");
        rp_sb_md(&b, r->git);
        rp_sb_puts(&b, "`");
    }
    if (r->finished_at[0]) {
        rp_sb_puts(&b, " · finished ");
        rp_sb_md(&b, r->finished_at);
    }
    if (!strcmp(r->kind, "compare")) {
        rp_sb_puts(&b, "\n\nA = `");
        rp_sb_md(&b, r->source[0]);
        rp_sb_puts(&b, "`, B = `");
        rp_sb_md(&b, r->source[1]);
        rp_sb_puts(&b, "`; each case of B is compared with the same case of A.");
    }
    rp_sb_puts(&b, "\n\n| verdict | cases |\n|---|---:|\n");
    const int *ord = rp_rclass_order();
    for (int k = 0; k < RP_RC_COUNT; k++)
        if (counts[ord[k]]) rp_sb_printf(&b, "| %s %s | %d |\n", mark(ord[k]), rp_rclass_name(ord[k]), counts[ord[k]]);
    if (failing) {
        rp_sb_printf(&b, "\n## Failing cases (%d)\n\n| verdict | case | id | evidence |\n|---|---|---|---|\n", failing);
        for (int k = 0; k < RP_RC_COUNT; k++)
            for (int i = 0; i < r->n; i++) {
                const rp_rcase *c = &r->cases[i];
                if (c->pass || c->verdict != ord[k]) continue;
                rp_sb_printf(&b, "| %s %s | ", mark(c->verdict), rp_rclass_name(c->verdict));
                rp_sb_md(&b, c->name);
                rp_sb_puts(&b, " | `");
                rp_sb_md(&b, c->id);
                rp_sb_puts(&b, "` | ");
                rp_sb_md(&b, c->evidence);
                rp_sb_puts(&b, " |\n");
            }
    }
    char axes[2][RP_AXIS_LEN];
    if (rp_run_axes(r, axes, 2) == 2) {
        rp_sb_puts(&b, "\n## By configuration\n");
        grid(&b, r, axes[0], axes[1]);
    }
    rp_sb_puts(&b, "\n## All cases\n\n| verdict | case | id | degrees | PSNR | SSIM | changed | latents max-abs |\n"
                   "|---|---|---|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        char ps[32], ss[32], ch[32], ma[32];
        rp_fmt_psnr(rp_rcase_psnr(c), ps, sizeof ps);
        rp_fmt_ssim(rp_rcase_ssim(c), ss, sizeof ss);
        rp_fmt_pct(rp_rcase_changed(c), ch, sizeof ch);
        rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
        rp_sb_printf(&b, "| %s %s | ", mark(c->verdict), rp_rclass_name(c->verdict));
        rp_sb_md(&b, c->name);
        if (c->is_ref) rp_sb_puts(&b, " (reference)");
        rp_sb_puts(&b, " | `");
        rp_sb_md(&b, c->id);
        rp_sb_puts(&b, "` | ");
        rp_sb_md(&b, c->degrees);
        rp_sb_printf(&b, " | %s | %s | %s | %s |\n", ps, ss, ch, ma);
    }
    if (plots && plots->n) {
        int shown = 0;
        for (int k = 0; k < plots->n; k++) {
            const rp_plot *p = &plots->p[k];
            if (p->case_id[0]) continue; /* per-case plots: counted below */
            if (!shown++) rp_sb_puts(&b, "\n## Plots\n\n");
            rp_sb_puts(&b, "- ");
            rp_sb_md(&b, p->title);
            if (p->written) {
                rp_sb_puts(&b, ": `");
                rp_sb_md(&b, p->svg);
                rp_sb_puts(&b, "`, `");
                rp_sb_md(&b, p->png);
                rp_sb_puts(&b, "`\n");
            } else {
                rp_sb_puts(&b, ": skipped (");
                rp_sb_md(&b, p->reason);
                rp_sb_puts(&b, ")\n");
            }
        }
        int per_case = 0;
        for (int k = 0; k < plots->n; k++) per_case += plots->p[k].case_id[0] && plots->p[k].written;
        if (per_case) rp_sb_printf(&b, "- %d per-step error plots: `plots/steps_<id>.svg`\n", per_case);
    }
    rp_sb_puts(&b, "\nFull report with images: `report.html` · machine-readable: `summary.json`, `junit.xml`\n");
    rp_status st = rp_sb_write(&b, path, err);
    rp_sb_free(&b);
    return st;
}
