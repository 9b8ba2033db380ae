/* terminal.c — the summary printed at the end of a run (and by `repro
 * report`): verdict counts red first with a bar, then every failing case on
 * one line with its evidence. Plain text unless colour is asked for. */
#include "reports/report.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reports/rutil.h"

#define BAR 24
#define EVIDENCE_MAX 160

/* The ANSI colour of a verdict class ("" without colour). */
static const char *ansi(int verdict, int colour) {
    if (!colour) return "";
    switch (rp_rclass_tone(verdict)) {
    case RP_TONE_RED: return "\033[1;31m";
    case RP_TONE_AMBER: return "\033[33m";
    case RP_TONE_GREEN: return "\033[32m";
    case RP_TONE_GREY: return "\033[90m";
    default: return "\033[34m";
    }
}

/* Prints at most max bytes of s, cut at a UTF-8 boundary, "..." when cut. */
static void put_cut(FILE *f, const char *s, size_t max) {
    size_t n = strlen(s);
    if (n <= max) {
        fputs(s, f);
        return;
    }
    n = max - 3;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    fprintf(f, "%.*s...", (int)n, s);
}

void rp_report_terminal(const rp_run *r, FILE *f, int colour) {
    int counts[RP_RC_COUNT] = {0}, failing = 0, most = 0;
    for (int i = 0; i < r->n; i++) {
        counts[r->cases[i].verdict]++;
        failing += !r->cases[i].pass;
    }
    for (int k = 0; k < RP_RC_COUNT; k++) most = counts[k] > most ? counts[k] : most;
    const char *off = colour ? "\033[0m" : "", *bold = colour ? "\033[1m" : "";
    fprintf(f, "%s%s%s: %d case%s, ", bold, r->title, off, r->n, r->n == 1 ? "" : "s");
    if (failing) fprintf(f, "%s%d failing%s\n", colour ? "\033[1;31m" : "", failing, off);
    else fprintf(f, "%snone failing%s\n", colour ? "\033[32m" : "", off);
    const int *ord = rp_rclass_order();
    for (int k = 0; k < RP_RC_COUNT; k++) {
        const int v = ord[k];
        if (!counts[v]) continue;
        int w = most ? (counts[v] * BAR + most - 1) / most : 0;
        fprintf(f, "  %s%-17s%s %5d  %s", ansi(v, colour), rp_rclass_name(v), off, counts[v], ansi(v, colour));
        while (w-- > 0) fputs("█", f);
        fprintf(f, "%s\n", off);
    }
    if (!failing) return;
    fprintf(f, "failing:\n");
    for (int k = 0; k < RP_RC_COUNT; k++)
        for (int i = 0; i < r->n; i++) {
            const rp_rcase *c = &r->cases[i];
            if (c->pass || c->verdict != ord[k]) continue;
            char name[40];
            snprintf(name, sizeof name, "%.36s%s", c->name, strlen(c->name) > 36 ? "..." : "");
            fprintf(f, "  %s%-16s%s %-16s %-39s ", ansi(c->verdict, colour), rp_rclass_name(c->verdict), off, c->id,
                    name);
            put_cut(f, c->evidence, EVIDENCE_MAX);
            fputc('\n', f);
        }
}

int rp_report_colour(const char *choice, FILE *f) {
    if (!strcmp(choice, "always")) return 1;
    if (!strcmp(choice, "never")) return 0;
    return isatty(fileno(f)) && !getenv("NO_COLOR");
}
