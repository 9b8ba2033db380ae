/* junit.c — junit.xml: one <testcase> per case, in one <testsuite> per matrix,
 * the form Jenkins, GitLab and GitHub test reporters read (the Ant JUnit
 * schema: failures and skipped per suite, time in seconds).
 *
 * A failing case (a failing verdict that was not expected, or outside the
 * tolerances) is a <failure> whose message is the one-line evidence and whose
 * type is the verdict; SKIPPED (and cases never run) are <skipped>; everything
 * else passes, with its verdict and metrics in <system-out>. */
#include "reports/report.h"

#include <math.h>
#include <string.h>

#include "reports/rutil.h"

/* A duration for the time attribute: 0 when unknown. */
static double secs(double s) { return isfinite(s) && s > 0 ? s : 0; }

/* "2026-11-20T23:36:24Z" -> "2026-11-20T23:36:24" (the schema's timestamp has no zone). */
static void stamp(rp_sb *b, const char *t) {
    const size_t n = strlen(t);
    rp_sb_putn(b, t, n && t[n - 1] == 'Z' ? n - 1 : n);
}

/* The verdict, id, degrees, metrics and evidence as text lines (XML-escaped). */
static void metrics_text(rp_sb *b, const rp_rcase *c) {
    char ps[32], ss[32], ch[32], ma[32];
    rp_fmt_psnr(rp_rcase_psnr(c), ps, sizeof ps);
    rp_fmt_ssim(rp_rcase_ssim(c), ss, sizeof ss);
    rp_fmt_pct(rp_rcase_changed(c), ch, sizeof ch);
    rp_fmt_sci(rp_rcase_max_abs(c), ma, sizeof ma);
    rp_sb_printf(b, "verdict: %s%s\nid: %s\ndegrees: ", rp_rclass_name(c->verdict), c->classified ? "" : " (provisional)",
                 c->id);
    rp_sb_xml(b, c->degrees);
    rp_sb_printf(b, "\nPSNR: %s  SSIM: %s  changed: %s  latents max-abs: %s\nevidence: ", ps, ss, ch, ma);
    rp_sb_xml(b, c->evidence);
    rp_sb_puts(b, "\n");
    if (c->dir[0]) {
        rp_sb_puts(b, "results: ");
        rp_sb_xml(b, c->dir);
        rp_sb_puts(b, "\n");
    }
}

rp_status rp_report_junit(const rp_run *r, const char *path, rp_error *err) {
    rp_sb b = {0};
    int tests = r->n, failures = 0, skipped = 0;
    double total = 0;
    for (int i = 0; i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        const int skip = c->verdict == RP_V_SKIPPED || c->verdict == RP_RC_PENDING;
        failures += !c->pass && !skip;
        skipped += skip;
        total += secs(c->wall_s);
    }
    rp_sb_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"repro: ");
    rp_sb_xml(&b, r->title);
    rp_sb_printf(&b, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n", tests, failures,
                 skipped, total);
    /* one suite per matrix, in the order the matrices first appear */
    for (int i = 0; i < r->n; i++) {
        int seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = !strcmp(r->cases[k].matrix, r->cases[i].matrix);
        if (seen) continue;
        const char *m = r->cases[i].matrix;
        int t = 0, f = 0, s = 0;
        double tm = 0;
        for (int k = i; k < r->n; k++) {
            const rp_rcase *c = &r->cases[k];
            if (strcmp(c->matrix, m)) continue;
            const int skip = c->verdict == RP_V_SKIPPED || c->verdict == RP_RC_PENDING;
            t++;
            f += !c->pass && !skip;
            s += skip;
            tm += secs(c->wall_s);
        }
        rp_sb_puts(&b, "  <testsuite name=\"");
        rp_sb_xml(&b, m);
        rp_sb_printf(&b, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\"", t, f, s, tm);
        if (r->finished_at[0]) {
            rp_sb_puts(&b, " timestamp=\"");
            stamp(&b, r->finished_at);
            rp_sb_puts(&b, "\"");
        }
        rp_sb_puts(&b, ">\n    <properties>\n      <property name=\"kind\" value=\"");
        rp_sb_xml(&b, r->kind);
        rp_sb_puts(&b, "\"/>\n      <property name=\"git\" value=\"");
        rp_sb_xml(&b, r->git);
        rp_sb_puts(&b, "\"/>\n      <property name=\"source\" value=\"");
        rp_sb_xml(&b, r->source[0]);
        rp_sb_puts(&b, "\"/>\n    </properties>\n");
        for (int k = i; k < r->n; k++) {
            const rp_rcase *c = &r->cases[k];
            if (strcmp(c->matrix, m)) continue;
            rp_sb_puts(&b, "    <testcase classname=\"repro.");
            rp_sb_xml(&b, m);
            rp_sb_puts(&b, "\" name=\"");
            rp_sb_xml(&b, c->name[0] ? c->name : c->id);
            rp_sb_puts(&b, " [");
            rp_sb_xml(&b, c->id);
            rp_sb_printf(&b, "]\" time=\"%.3f\">\n", secs(c->wall_s));
            const int skip = c->verdict == RP_V_SKIPPED || c->verdict == RP_RC_PENDING;
            if (skip) {
                rp_sb_puts(&b, "      <skipped message=\"");
                rp_sb_xml(&b, c->evidence);
                rp_sb_puts(&b, "\"/>\n");
            } else if (!c->pass) {
                rp_sb_puts(&b, "      <failure message=\"");
                rp_sb_xml(&b, c->evidence);
                rp_sb_printf(&b, "\" type=\"%s\">", rp_rclass_name(c->verdict));
                metrics_text(&b, c);
                const char *rep = rp_j_str(c->result, "report", "");
                if (rep[0]) {
                    rp_sb_puts(&b, "\n");
                    rp_sb_xml(&b, rep);
                }
                rp_sb_puts(&b, "</failure>\n");
            }
            if (!skip) {
                rp_sb_puts(&b, "      <system-out>");
                metrics_text(&b, c);
                rp_sb_puts(&b, "</system-out>\n");
            }
            rp_sb_puts(&b, "    </testcase>\n");
        }
        rp_sb_puts(&b, "  </testsuite>\n");
    }
    rp_sb_puts(&b, "</testsuites>\n");
    rp_status st = rp_sb_write(&b, path, err);
    rp_sb_free(&b);
    return st;
}
