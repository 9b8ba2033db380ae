/* history.c — every run's verdicts and metrics in an SQLite database, for trends
 * across nightly runs (`repro report --history DB`, `repro history DB`).
 *
 * Tables (schema version 1, in meta):
 *   runs(run_id, run_key UNIQUE, title, source, git, engine, host, finished_at,
 *        recorded_at, n_cases, n_failing)
 *   cases(case_id PRIMARY KEY, name, matrix, config)        the latest config seen
 *   verdicts(run_id, case_id, verdict, pass, status, evidence)
 *   metrics(run_id, case_id, name, value)                    NULL for NaN
 * A run's key hashes its title and its cases' ids and run stamps, so appending
 * the same stored run twice (a rebuilt report, a classifier that ran later)
 * replaces its rows instead of adding a second point to every trend. The
 * append is one transaction: a reader never sees half a run. */
#include "reports/report.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "reports/rutil.h"

const char *const RP_HISTORY_METRICS[] = {"psnr", "ssim", "changed", "max_abs", "rel_l2", "wall_s",
                                          "first_step_ratio", "first_layer_ratio", NULL};

static const char SCHEMA[] =
    "PRAGMA foreign_keys = ON;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1');"
    "CREATE TABLE IF NOT EXISTS runs("
    "  run_id INTEGER PRIMARY KEY AUTOINCREMENT, run_key TEXT UNIQUE NOT NULL, title TEXT, source TEXT,"
    "  git TEXT, engine TEXT, host TEXT, finished_at TEXT, recorded_at TEXT, n_cases INTEGER, n_failing INTEGER);"
    "CREATE TABLE IF NOT EXISTS cases(case_id TEXT PRIMARY KEY, name TEXT, matrix TEXT, config TEXT);"
    "CREATE TABLE IF NOT EXISTS verdicts("
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, case_id TEXT NOT NULL,"
    "  verdict TEXT NOT NULL, pass INTEGER NOT NULL, status TEXT, evidence TEXT, PRIMARY KEY(run_id, case_id));"
    "CREATE TABLE IF NOT EXISTS metrics("
    "  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, case_id TEXT NOT NULL,"
    "  name TEXT NOT NULL, value REAL, PRIMARY KEY(run_id, case_id, name));"
    "CREATE INDEX IF NOT EXISTS metrics_by_case ON metrics(case_id, name);"
    "CREATE INDEX IF NOT EXISTS verdicts_by_case ON verdicts(case_id);";

/* Opens path (created when missing with flags including SQLITE_OPEN_CREATE). */
static rp_status db_open(const char *path, int flags, sqlite3 **db, rp_error *err) {
    *db = NULL;
    if (sqlite3_open_v2(path, db, flags, NULL) != SQLITE_OK) {
        rp_status st = RP_FAIL(err, RP_ERR_IO, "cannot open history database %s: %s", path,
                               *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close(*db);
        *db = NULL;
        return st;
    }
    /* nightly jobs may append while someone reads */
    sqlite3_busy_timeout(*db, 10000);
    return RP_OK;
}

/* RP_ERR_IO naming the database, what failed and SQLite's message. */
static rp_status db_fail(sqlite3 *db, const char *path, const char *what, rp_error *err) {
    return RP_FAIL(err, RP_ERR_IO, "history database %s: %s: %s", path, what, sqlite3_errmsg(db));
}

/* FNV-1a 64 of the run's identity: title, then each case's id and run stamp. */
static void run_key(const rp_run *r, char *out, size_t cap) {
    uint64_t h = 1469598103934665603ull;
#define MIX(s) for (const char *p_ = (s); *p_; p_++) h = (h ^ (unsigned char)*p_) * 1099511628211ull; \
               h = (h ^ 0xff) * 1099511628211ull
    MIX(r->title);
    for (int i = 0; i < r->n; i++) {
        MIX(r->cases[i].matrix);
        MIX(r->cases[i].id);
        MIX(r->cases[i].run_stamp);
    }
#undef MIX
    snprintf(out, cap, "%016llx", (unsigned long long)h);
}

/* The case's value of a history metric (NaN when it has none). */
static double metric_of(const rp_rcase *c, const char *name) {
    if (!strcmp(name, "psnr")) return rp_rcase_psnr(c);
    if (!strcmp(name, "ssim")) return rp_rcase_ssim(c);
    if (!strcmp(name, "changed")) return rp_rcase_changed(c);
    if (!strcmp(name, "max_abs")) return rp_rcase_max_abs(c);
    if (!strcmp(name, "rel_l2")) return rp_rcase_rel_l2(c);
    if (!strcmp(name, "wall_s")) return c->wall_s;
    const cJSON *ev = rp_j_get(c->classification, "evidence");
    if (!strcmp(name, "first_step_ratio")) return rp_j_num(rp_j_get(ev, "first_step"), "ratio", NAN);
    if (!strcmp(name, "first_layer_ratio")) return rp_j_num(rp_j_get(ev, "first_layer"), "ratio", NAN);
    return NAN;
}

/* Binds a copy of v. */
static void bind_text(sqlite3_stmt *s, int i, const char *v) { sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT); }

/* Binds v, NULL for NaN (SQLite has no NaN; +-inf are stored as REAL). */
static void bind_num(sqlite3_stmt *s, int i, double v) {
    if (isnan(v)) sqlite3_bind_null(s, i);
    else sqlite3_bind_double(s, i, v);
}

rp_status rp_history_append(const char *path, const rp_run *r, long long *run_id, rp_error *err) {
    sqlite3 *db;
    RP_TRY(db_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db, err));
    char *msg = NULL;
    if (sqlite3_exec(db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        rp_status st = RP_FAIL(err, RP_ERR_IO, "history database %s: cannot create the tables: %s", path,
                               msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(db);
        return st;
    }
    rp_status st = RP_OK;
    sqlite3_stmt *s_run = NULL, *s_case = NULL, *s_ver = NULL, *s_met = NULL, *s_find = NULL;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        st = db_fail(db, path, "cannot start a transaction", err);
        sqlite3_close(db);
        return st;
    }
    char key[32], host[256], now[32];
    run_key(r, key, sizeof key);
    snprintf(host, sizeof host, "%s", r->n ? rp_j_str(rp_j_get(r->cases[0].env, "host"), "hostname", "") : "");
    const time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    int failing = 0;
    for (int i = 0; i < r->n; i++) failing += !r->cases[i].pass;
    long long id = -1;
    /* an already recorded run keeps its row id (and so its place in the trends) */
    if (sqlite3_prepare_v2(db, "SELECT run_id FROM runs WHERE run_key = ?1", -1, &s_find, NULL) != SQLITE_OK)
        st = db_fail(db, path, "prepare", err);
    if (st == RP_OK) {
        bind_text(s_find, 1, key);
        if (sqlite3_step(s_find) == SQLITE_ROW) id = sqlite3_column_int64(s_find, 0);
    }
    if (st == RP_OK && id >= 0) {
        char sql[160];
        snprintf(sql, sizeof sql, "DELETE FROM verdicts WHERE run_id = %lld; DELETE FROM metrics WHERE run_id = %lld;",
                 id, id);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) st = db_fail(db, path, "replace run", err);
    }
    const char *run_sql =
        id >= 0 ? "UPDATE runs SET title = ?2, source = ?3, git = ?4, engine = ?5, host = ?6, finished_at = ?7, "
                  "recorded_at = ?8, n_cases = ?9, n_failing = ?10 WHERE run_key = ?1"
                : "INSERT INTO runs(run_key, title, source, git, engine, host, finished_at, recorded_at, n_cases, "
                  "n_failing) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
    if (st == RP_OK && sqlite3_prepare_v2(db, run_sql, -1, &s_run, NULL) != SQLITE_OK)
        st = db_fail(db, path, "prepare", err);
    if (st == RP_OK) {
        bind_text(s_run, 1, key);
        bind_text(s_run, 2, r->title);
        bind_text(s_run, 3, r->source[0]);
        bind_text(s_run, 4, r->git);
        bind_text(s_run, 5, r->engine);
        bind_text(s_run, 6, host);
        bind_text(s_run, 7, r->finished_at[0] ? r->finished_at : now);
        bind_text(s_run, 8, now);
        sqlite3_bind_int(s_run, 9, r->n);
        sqlite3_bind_int(s_run, 10, failing);
        if (sqlite3_step(s_run) != SQLITE_DONE) st = db_fail(db, path, "insert run", err);
        else if (id < 0) id = sqlite3_last_insert_rowid(db);
    }
    if (st == RP_OK &&
        (sqlite3_prepare_v2(db, "INSERT INTO cases(case_id, name, matrix, config) VALUES (?1, ?2, ?3, ?4) "
                                "ON CONFLICT(case_id) DO UPDATE SET name = ?2, matrix = ?3, "
                                "config = coalesce(?4, config)", -1, &s_case, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO verdicts(run_id, case_id, verdict, pass, status, evidence) "
                                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1, &s_ver, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO metrics(run_id, case_id, name, value) VALUES (?1, ?2, ?3, ?4)",
                            -1, &s_met, NULL) != SQLITE_OK))
        st = db_fail(db, path, "prepare", err);
    for (int i = 0; st == RP_OK && i < r->n; i++) {
        const rp_rcase *c = &r->cases[i];
        char *cfg = c->config ? cJSON_PrintUnformatted(c->config) : NULL;
        sqlite3_reset(s_case);
        bind_text(s_case, 1, c->id);
        bind_text(s_case, 2, c->name);
        bind_text(s_case, 3, c->matrix);
        if (cfg) bind_text(s_case, 4, cfg);
        else sqlite3_bind_null(s_case, 4);
        if (sqlite3_step(s_case) != SQLITE_DONE) st = db_fail(db, path, "insert case", err);
        free(cfg);
        sqlite3_reset(s_ver);
        sqlite3_bind_int64(s_ver, 1, id);
        bind_text(s_ver, 2, c->id);
        bind_text(s_ver, 3, rp_rclass_name(c->verdict));
        sqlite3_bind_int(s_ver, 4, c->pass);
        bind_text(s_ver, 5, c->status);
        bind_text(s_ver, 6, c->evidence);
        if (st == RP_OK && sqlite3_step(s_ver) != SQLITE_DONE) st = db_fail(db, path, "insert verdict", err);
        for (int k = 0; st == RP_OK && RP_HISTORY_METRICS[k]; k++) {
            const double v = metric_of(c, RP_HISTORY_METRICS[k]);
            if (isnan(v)) continue;
            sqlite3_reset(s_met);
            sqlite3_bind_int64(s_met, 1, id);
            bind_text(s_met, 2, c->id);
            bind_text(s_met, 3, RP_HISTORY_METRICS[k]);
            bind_num(s_met, 4, v);
            if (sqlite3_step(s_met) != SQLITE_DONE) st = db_fail(db, path, "insert metric", err);
        }
    }
    sqlite3_finalize(s_find);
    sqlite3_finalize(s_run);
    sqlite3_finalize(s_case);
    sqlite3_finalize(s_ver);
    sqlite3_finalize(s_met);
    if (st == RP_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) st = db_fail(db, path, "commit", err);
    if (st != RP_OK) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    if (st == RP_OK && run_id) *run_id = id;
    return st;
}

/* Column i as text, "" for NULL. */
static const char *col_text(sqlite3_stmt *s, int i) {
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? (const char *)t : "";
}

/* 1 when m is one of RP_HISTORY_METRICS. */
static int known_metric(const char *m) {
    for (int k = 0; RP_HISTORY_METRICS[k]; k++)
        if (!strcmp(m, RP_HISTORY_METRICS[k])) return 1;
    return 0;
}

/* The one case id matching want (exact id, unique id prefix, or exact name) into full. */
static rp_status resolve_case(sqlite3 *db, const char *path, const char *want, char *full, rp_error *err) {
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT case_id FROM cases WHERE case_id = ?1 UNION "
                               "SELECT case_id FROM cases WHERE substr(case_id, 1, length(?1)) = ?1 "
                               "AND NOT EXISTS (SELECT 1 FROM cases WHERE case_id = ?1) UNION "
                               "SELECT case_id FROM cases WHERE name = ?1 ORDER BY 1", -1, &s, NULL) != SQLITE_OK)
        return db_fail(db, path, "prepare", err);
    bind_text(s, 1, want);
    int n = 0;
    char first[40] = "", second[40] = "";
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(s, 0);
        if (n == 0) snprintf(first, sizeof first, "%s", id ? id : "");
        else if (n == 1) snprintf(second, sizeof second, "%s", id ? id : "");
        n++;
    }
    sqlite3_finalize(s);
    if (n == 0) return RP_FAIL(err, RP_ERR_NOT_FOUND, "history database %s has no case '%s'", path, want);
    if (n > 1)
        return RP_FAIL(err, RP_ERR_INVALID, "'%s' matches %d cases (%s, %s%s); give more of the id", want, n, first,
                       second, n > 2 ? ", ..." : "");
    snprintf(full, 40, "%s", first);
    return RP_OK;
}

rp_status rp_history_trend(const char *path, const char *case_id, const char *metric, int last,
                           rp_hist_point **pts, int *n, char *full_id, rp_error *err) {
    *pts = NULL;
    *n = 0;
    if (!known_metric(metric)) {
        char list[256] = "";
        for (int k = 0; RP_HISTORY_METRICS[k]; k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", RP_HISTORY_METRICS[k]);
        }
        return RP_FAIL(err, RP_ERR_INVALID, "unknown metric '%s' (one of: %s)", metric, list);
    }
    if (!rp_is_file(path)) return RP_FAIL(err, RP_ERR_NOT_FOUND, "no history database at %s", path);
    sqlite3 *db;
    RP_TRY(db_open(path, SQLITE_OPEN_READONLY, &db, err));
    char full[40];
    rp_status st = resolve_case(db, path, case_id, full, err);
    sqlite3_stmt *s = NULL;
    if (st == RP_OK &&
        sqlite3_prepare_v2(db, "SELECT r.run_id, r.finished_at, r.git, v.verdict, m.value FROM runs r "
                               "JOIN verdicts v ON v.run_id = r.run_id AND v.case_id = ?1 "
                               "LEFT JOIN metrics m ON m.run_id = r.run_id AND m.case_id = ?1 AND m.name = ?2 "
                               "ORDER BY r.finished_at, r.run_id", -1, &s, NULL) != SQLITE_OK)
        st = db_fail(db, path, "prepare", err);
    if (st == RP_OK) {
        bind_text(s, 1, full);
        bind_text(s, 2, metric);
    }
    int cap = 0;
    while (st == RP_OK) {
        const int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) {
            st = db_fail(db, path, "query", err);
            break;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            rp_hist_point *q = realloc(*pts, sizeof *q * (size_t)cap);
            if (!q) {
                st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
                break;
            }
            *pts = q;
        }
        rp_hist_point *p = &(*pts)[(*n)++];
        memset(p, 0, sizeof *p);
        p->run_id = sqlite3_column_int64(s, 0);
        snprintf(p->when, sizeof p->when, "%s", col_text(s, 1));
        snprintf(p->git, sizeof p->git, "%s", col_text(s, 2));
        snprintf(p->verdict, sizeof p->verdict, "%s", col_text(s, 3));
        p->value = sqlite3_column_type(s, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 4);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (st != RP_OK) {
        free(*pts);
        *pts = NULL;
        *n = 0;
        return st;
    }
    if (last > 0 && *n > last) {
        memmove(*pts, *pts + (*n - last), sizeof **pts * (size_t)last);
        *n = last;
    }
    if (full_id) snprintf(full_id, 40, "%s", full);
    return RP_OK;
}

void rp_sparkline_text(const double *v, int n, char *buf, size_t cap) {
    static const char *const BARS[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            if (v[i] < lo) lo = v[i];
            if (v[i] > hi) hi = v[i];
        }
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *g;
        if (isnan(v[i])) g = "·";
        else if (isinf(v[i])) g = v[i] > 0 ? "↑" : "↓";
        else g = BARS[hi > lo ? (int)((v[i] - lo) / (hi - lo) * 7 + 0.5) : 3];
        const size_t l = strlen(g);
        if (used + l + 1 > cap) break;
        memcpy(buf + used, g, l + 1);
        used += l;
    }
}

rp_status rp_history_print_runs(const char *path, int last, FILE *f, rp_error *err) {
    if (!rp_is_file(path)) return RP_FAIL(err, RP_ERR_NOT_FOUND, "no history database at %s", path);
    sqlite3 *db;
    RP_TRY(db_open(path, SQLITE_OPEN_READONLY, &db, err));
    sqlite3_stmt *s = NULL;
    rp_status st = RP_OK;
    /* the last N in time order: pick them newest first, then turn them round */
    if (sqlite3_prepare_v2(db, "SELECT * FROM (SELECT run_id, finished_at, git, host, n_cases, n_failing, title "
                               "FROM runs ORDER BY finished_at DESC, run_id DESC LIMIT ?1) "
                               "ORDER BY finished_at, run_id", -1, &s, NULL) != SQLITE_OK)
        st = db_fail(db, path, "query (is it a repro history database?)", err);
    if (st == RP_OK) {
        sqlite3_bind_int64(s, 1, last > 0 ? last : -1);
        fprintf(f, "%5s  %-20s  %-16s  %-12s %6s %8s  %s\n", "run", "finished", "git", "host", "cases", "failing",
                "title");
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW)
            fprintf(f, "%5lld  %-20s  %-16.16s  %-12.12s %6d %8d  %s\n", (long long)sqlite3_column_int64(s, 0),
                    col_text(s, 1), col_text(s, 2), col_text(s, 3), sqlite3_column_int(s, 4),
                    sqlite3_column_int(s, 5), col_text(s, 6));
        if (rc != SQLITE_DONE) st = db_fail(db, path, "query", err);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return st;
}
