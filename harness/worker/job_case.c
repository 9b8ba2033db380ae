/* job_case.c — `repro worker --job case`: one rank of one case (see job_case.h). */
#include "job_case.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/attention/attention.h"
#include "engine/clock.h"
#include "engine/ctx.h"
#include "engine/device.h"
#include "engine/fsutil.h"
#include "engine/image.h"
#include "engine/models/family_ops.h"
#include "engine/parallel/parallel.h"
#include "engine/pipeline/model_cache.h"
#include "engine/pipeline/pipeline.h"
#include "engine/rng.h"
#include "engine/safetensors.h"
#include "engine/samplers/samplers.h"
#include "engine/trace.h"
#include "harness/case/case.h"
#include "harness/analysis/classify.h"
#include "harness/sweep/env.h"
#include "backends/launch.h"
#include "harness/store/store.h"
#include "harness/sweep/validate.h"
#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/device_cuda.h"
#endif

/* Reports err prefixed with this rank; returns code. */
static int fail(const rp_rankenv *re, const rp_error *err, int code) {
    rp_error e = *err;
    snprintf(e.msg, sizeof e.msg, "worker rank %d/%d (case): %.980s", re->rank, re->world, err->msg);
    rp_report_error(&e);
    return code;
}


/* ctx from the case's numerics (validation has checked every value). On a CUDA device
 * the case's precision is the GEMMs' (the device's, make_device); ctx->precision is what
 * the host-side parts (the text encoder) run in: bf16 for bf16, fp32 for fp32, tf32, fp16. */
static rp_status case_ctx(const rp_case *c, rp_ctx *ctx, rp_error *err) {
    *ctx = rp_ctx_default();
    ctx->threads = c->threads;
    ctx->reduce_split = c->reduce_split;
    RP_TRY(rp_numerics_parse(c->numerics, &ctx->numerics, err));
    RP_TRY(rp_precision_for_host(c->precision, rp_device_name_is_cuda(c->device), &ctx->precision, err));
    RP_TRY(rp_attn_kind_parse(c->attention, &ctx->attn.kind, err));
    char q[32], kv[32];
    snprintf(q, sizeof q, "%d", c->attn_q_chunk);
    snprintf(kv, sizeof kv, "%d", c->attn_kv_chunk);
    return rp_ctx_configure(ctx, c->attn_q_chunk ? q : NULL, c->attn_kv_chunk ? kv : NULL,
                            c->blas_core[0] ? c->blas_core : NULL, c->device_profile[0] ? c->device_profile : NULL,
                            err);
}

/* The test hook REPRO_DEVICE (unset or "": none; "host-check": a device=cpu case runs its
 * models on the checking host device of engine/device.h, whose results must be bitwise the
 * plain CPU path's). Anything else is a configuration error naming the variable. */
static rp_status device_hook(const rp_case *c, int *host_check, rp_error *err) {
    const char *v = getenv("REPRO_DEVICE");
    *host_check = 0;
    if (!v || !*v) return RP_OK;
    if (strcmp(v, "host-check"))
        return RP_FAIL(err, RP_ERR_INVALID, "REPRO_DEVICE=%s: unknown (known: host-check, a test hook for device=cpu "
                       "cases)", v);
    *host_check = !strcmp(c->device, "cpu"); /* a cuda case runs on its GPU whatever the hook says */
    return RP_OK;
}

/* The device the case's models run on: NULL for the plain CPU path, the host-check
 * device under the hook, or the case's GPU (device cuda[:<name>|:#<i>], among the
 * matching GPUs number local_rank modulo their count) with its precision and gpu_mode.
 * *ordinal: the CUDA ordinal it made current (-1 without a GPU). */
static rp_status make_device(const rp_case *c, int host_check, int local_rank, rp_device **out, int *ordinal,
                             rp_error *err) {
    return rp_device_open(host_check ? "host-check" : c->device, c->precision, c->gpu_mode, local_rank, out, ordinal,
                          err);
}

/* mkdir -p */
static rp_status make_dir(const char *dir, rp_error *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
        return RP_FAIL(err, RP_ERR_INVALID, "--out-dir: path too long");
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return RP_FAIL(err, RP_ERR_IO, "--out-dir: cannot create %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return RP_FAIL(err, RP_ERR_IO, "--out-dir: cannot create %s: %s", buf, strerror(errno));
    return RP_OK;
}

/* Writes text to path atomically (path.tmp.<pid>, then rename). */
static rp_status write_atomic(const char *path, const char *text, rp_error *err) {
    RP_TRY(rp_atomic_target_ok(path, err));
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%.4000s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return RP_FAIL(err, RP_ERR_INVALID, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return RP_FAIL(err, RP_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    int ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return RP_FAIL(err, RP_ERR_IO, "%s: write failed", path);
    }
    return RP_OK;
}

static const char *layout_str(const rp_case *c, char *buf, size_t cap) {
    rp_par_degrees d;
    rp_case_degrees(c, &d);
    rp_par_named_text(&d, "=", " ", buf, cap);
    return buf;
}

/* latents.safetensors: as `repro generate --latents`, plus the case. */
static rp_status write_latents(const char *path, const rp_case *c, const char *id, const rp_gen_result *r,
                               rp_error *err) {
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the latents writer");
    const int B = r->B, flow = rp_family_ops_of(r->family)->cond == RP_COND_TEXT;
    int64_t seeds[RP_CASE_MAX_ITEMS], classes[RP_CASE_MAX_ITEMS], gidx[RP_CASE_MAX_ITEMS];
    for (int b = 0; b < B; b++) {
        seeds[b] = (int64_t)c->items[b].seed;
        classes[b] = c->items[b].class_id;
        gidx[b] = b;
    }
    cJSON *cj = rp_case_to_json(c);
    char *case_text = cj ? cJSON_PrintUnformatted(cj) : NULL;
    cJSON_Delete(cj);
    char v[512];
    rp_status st = case_text ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the case metadata");
#define TRY(e) do { if (st == RP_OK) st = (e); } while (0)
    TRY(rp_store_latents_tensors(w, r, seeds, classes, gidx, err));
    TRY(rp_st_writer_meta(w, "repro.format", "latents-v1", err));
    TRY(rp_st_writer_meta(w, "repro.command", "worker --job case", err));
    TRY(rp_st_writer_meta(w, "repro.version", REPRO_VERSION, err));
    TRY(rp_st_writer_meta(w, "repro.git_revision", rp_git_revision(), err));
    TRY(rp_st_writer_meta(w, "case_id", id, err));
    TRY(rp_st_writer_meta(w, "case", case_text ? case_text : "", err));
    TRY(rp_st_writer_meta(w, "model", c->model, err));
    TRY(rp_st_writer_meta(w, "weights", r->weights_path, err));
    TRY(rp_st_writer_meta(w, "vae", r->vae_name, err));
    TRY(rp_st_writer_meta(w, "vae_weights", r->vae_weights_path, err));
    if (flow) {
        TRY(rp_st_writer_meta(w, "text_encoder", r->te_name, err));
        TRY(rp_st_writer_meta(w, "te_weights", r->te_weights_path, err));
    }
    TRY(rp_st_writer_meta(w, "layout", layout_str(c, v, sizeof v), err));
    TRY(rp_st_writer_meta(w, "backend", c->backend, err));
    TRY(rp_st_writer_meta(w, "inject", c->inject, err));
    TRY(rp_st_writer_meta(w, "batch_forward", c->batch_forward, err));
    TRY(rp_st_writer_meta(w, "trajectory_space", flow ? "flow" : "vp", err));
    TRY(rp_st_writer_write(w, path, err));
#undef TRY
    free(case_text);
    rp_st_writer_free(w);
    return st;
}

/* done.json: written last, so its presence means every other file is complete. */
static rp_status write_done(const char *path, const rp_case *c, const char *id, const rp_gen_result *r,
                            const rp_parallel *par, const char *device, const double *t, rp_error *err) {
    cJSON *j = cJSON_CreateObject(), *tm = cJSON_CreateObject(), *lay = cJSON_CreateObject();
    if (!j || !tm || !lay) {
        cJSON_Delete(j); cJSON_Delete(tm); cJSON_Delete(lay);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for done.json");
    }
    cJSON_AddStringToObject(j, "status", "ok");
    cJSON_AddStringToObject(j, "case_id", id);
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddNumberToObject(j, "world", par->world);
    for (int i = 0; i < RP_PAR_N_DEGREES; i++) { /* xDiT's order */
        const rp_par_strategy_info *s = rp_par_member_strategy(i);
        cJSON_AddNumberToObject(lay, s->field, rp_par_degree(&c->deg, s));
    }
    if (rp_case_exactness(c) == RP_PAR_WARMUP_EXACT) { /* exact only in warmup */
        cJSON_AddNumberToObject(lay, "warmup_steps", c->warmup_steps);
        if (rp_case_pipeline_patches(c)) {
            cJSON_AddNumberToObject(lay, "num_pipeline_patch", rp_case_pipeline_patches(c));
            cJSON_AddItemToObject(lay, "pipefusion_layers",
                                  cJSON_CreateIntArray(c->pipefusion_layers, c->n_pipefusion_layers));
        }
    }
    cJSON_AddItemToObject(j, "layout", lay);
    /* steps [0, exact_steps) are exact by the layout's contract (all of them for exact layouts) */
    cJSON_AddNumberToObject(j, "exact_steps", rp_case_exactness(c) == RP_PAR_EXACT
                                                  ? r->steps : (c->warmup_steps < r->steps ? c->warmup_steps
                                                                                           : r->steps));
    cJSON_AddStringToObject(j, "exactness", rp_par_exactness_name(rp_case_exactness(c)));
    cJSON *strat = cJSON_AddArrayToObject(j, "strategies");
    const rp_par_strategy_info *used[RP_PAR_N_DEGREES];
    const int n_used = rp_par_layout_strategies(&par->deg, used);
    for (int i = 0; strat && i < n_used; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "name", used[i]->name);
        cJSON_AddStringToObject(o, "exactness", rp_par_exactness_name(used[i]->exactness));
        cJSON_AddStringToObject(o, "reorders", used[i]->reorders);
        cJSON_AddStringToObject(o, "bitwise_when", used[i]->bitwise_when);
        cJSON_AddItemToArray(strat, o);
    }
    cJSON_AddStringToObject(j, "backend", c->backend);
    cJSON_AddStringToObject(j, "device", device); /* what rank 0's models ran on */
    cJSON_AddStringToObject(j, "inject", c->inject);
    cJSON_AddNumberToObject(j, "items", r->B);
    cJSON_AddNumberToObject(j, "steps", r->steps);
    cJSON_AddNumberToObject(j, "model_evals_rank0", r->n_evals);
    cJSON_AddBoolToObject(j, "images", r->rgb != NULL);
    cJSON_AddBoolToObject(j, "trace_incomplete", par->trace_incomplete != 0);
    static const char *const NAMES[] = {"setup_s", "rendezvous_s", "encode_s", "sample_s", "decode_s", "gather_s",
                                        "write_s", "total_s"};
    for (int i = 0; i < 8; i++) cJSON_AddNumberToObject(tm, NAMES[i], t[i]);
    cJSON_AddItemToObject(j, "timings", tm);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory printing done.json");
    rp_status st = write_atomic(path, text, err);
    free(text);
    return st;
}

/* dir/image-<i>.png for every decoded item of r (none when r has no images). */
static rp_status write_images(const char *dir, const rp_gen_result *r, rp_error *err) {
    char path[4200];
    const size_t per = (size_t)r->H * r->W * 3;
    for (int i = 0; r->rgb && i < r->B; i++) {
        rp_store_image_path(path, sizeof path, dir, i);
        RP_TRY(rp_png_write(path, r->rgb + i * per, r->W, r->H, err));
    }
    return RP_OK;
}

/* Rank 0: every output file, done.json last. */
static rp_status write_outputs(const char *dir, const rp_case *c, const rp_gen_result *r, const rp_trace *trace,
                               const rp_parallel *par, const char *device, double *t, double t_start, rp_error *err) {
    const double t0 = rp_now_s();
    char id[32], path[4200];
    rp_case_id(c, id);
    rp_store_path(path, sizeof path, dir, RP_ART_LATENTS);
    RP_TRY(write_latents(path, c, id, r, err));
    RP_TRY(write_images(dir, r, err));
    rp_store_path(path, sizeof path, dir, RP_ART_TRACE);
    RP_TRY(rp_trace_save(trace, path, err));
    rp_store_path(path, sizeof path, dir, RP_ART_ENV);
    RP_TRY(rp_env_write(path, c->numerics, err));
    t[6] = rp_now_s() - t0;
    t[7] = rp_now_s() - t_start;
    rp_store_path(path, sizeof path, dir, RP_ART_DONE);
    return write_done(path, c, id, r, par, device, t, err);
}

/* ---- the classifier's runs (job_case.h) ---- */

/* Teacher forcing's input: ref_dir/latents.safetensors's trajectory (steps + 1, n_all, C, h,
 * w), items [first, first + count) of it into *out (steps + 1, count, C, h, w; malloc'd). */
static rp_status teacher_load(const char *ref_dir, int steps, int n_all, int first, int count, float **out,
                              rp_error *err) {
    char path[4200];
    rp_store_path(path, sizeof path, ref_dir, RP_ART_LATENTS);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    const rp_st_tensor *t = rp_st_find(f, "trajectory");
    rp_status st = RP_OK;
    if (!t || t->ndim != 5 || t->shape[0] != steps + 1 || t->shape[1] != n_all)
        st = RP_FAIL(err, RP_ERR_INVALID, "--teacher-force %s: needs a trajectory of %d steps and %d items (got %s)",
                     ref_dir, steps, n_all, t ? "another shape" : "none");
    float *all = NULL, *copy = NULL; /* all: the file's floats, a view where it can be */
    size_t per = 0;
    if (st == RP_OK) {
        per = (size_t)(t->shape[2] * t->shape[3] * t->shape[4]);
        st = rp_st_f32_borrow(f, t, &all, &copy, err);
    }
    if (st == RP_OK && !(*out = malloc(sizeof(float) * (size_t)(steps + 1) * count * per)))
        st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the teacher trajectory");
    for (int k = 0; st == RP_OK && k <= steps; k++) /* row k: this rank's items, in order */
        memcpy(*out + (size_t)k * count * per, all + ((size_t)k * n_all + first) * per, sizeof(float) * count * per);
    rp_st_close(f);
    free(copy);
    if (st != RP_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

/* Rank 0 in teacher mode: teacher.safetensors, the trace of every evaluation, env.json,
 * done.json last. */
static rp_status write_teacher(const char *dir, const rp_case *c, const rp_gen_result *r, const unsigned char *mask,
                               const char *ref_dir, const rp_trace *trace, const rp_parallel *par, const char *device,
                               double *t, double t_start, rp_error *err) {
    char id[32], path[4200];
    rp_case_id(c, id);
    float *steps = malloc(sizeof(float) * r->steps);
    rp_st_writer *w = rp_st_writer_new();
    rp_status st = steps && w ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "out of memory for teacher.safetensors");
    for (int k = 0; st == RP_OK && k < r->steps; k++) steps[k] = mask[k] ? 1.0f : 0.0f;
    const int64_t traj[5] = {r->steps + 1, r->B, r->C, r->h, r->w}, ns[1] = {r->steps};
    if (st == RP_OK) st = rp_st_writer_add(w, "teacher", RP_DT_F32, 5, traj, r->trajectory, err);
    if (st == RP_OK) st = rp_st_writer_add(w, "steps", RP_DT_F32, 1, ns, steps, err);
    /* what each step that ran started from (rows of the others NaN): the classifier holds
     * them to the reference's rows (cls_teacher_input) */
    const int64_t ins[5] = {r->steps, r->B, r->C, r->h, r->w};
    if (st == RP_OK && r->teacher_input) st = rp_st_writer_add(w, "input", RP_DT_F32, 5, ins, r->teacher_input, err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "repro.format", "teacher-v1", err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "case_id", id, err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "teacher_reference", ref_dir, err);
    rp_store_path(path, sizeof path, dir, RP_ART_TEACHER);
    if (st == RP_OK) st = rp_st_writer_write(w, path, err);
    rp_st_writer_free(w);
    free(steps);
    if (st == RP_OK) st = write_images(dir, r, err); /* with decode_ref: the reference's final latents' */
    rp_store_path(path, sizeof path, dir, RP_ART_TRACE);
    if (st == RP_OK) st = rp_trace_save(trace, path, err);
    rp_store_path(path, sizeof path, dir, RP_ART_ENV);
    if (st == RP_OK) st = rp_env_write(path, c->numerics, err);
    t[7] = rp_now_s() - t_start;
    rp_store_path(path, sizeof path, dir, RP_ART_DONE);
    return st == RP_OK ? write_done(path, c, id, r, par, device, t, err) : st;
}

/* The replica check of this run (engine/parallel/replica.c): every rank fingerprints each
 * row of its trajectory (the dp group's latents after every step; in teacher mode, every
 * one-step result), then rank 0 compares all ranks' fingerprints and writes
 * <dir>/replicas.json:
 *   {"checked": n, "first_difference": null | {"step": k, "tensor": s, "group": "sp" |
 *    "replica" | "world" | "own" | "gather", "ranks": [leader, rank], "other": s (opt)},
 *    "unchecked": s (opt)}
 * step: the sampling step of the evaluation (mask: a teacher run's steps; NULL: all). The
 * gather's finding (rp_par_dp_gather_check: rank 0's gathered copy of a group's rows against
 * the group leader's) is a difference of group "gather", ranks [leader, 0], when it comes
 * first. */
static rp_status replica_check(const char *dir, rp_parallel *par, const rp_ctx *ctx, const rp_gen_result *res,
                               int steps, const unsigned char *mask, const rp_par_gather_report *gather,
                               const char *device, rp_error *err) {
    /* one rank: only its own pairs (the own check's; a one-stage pipeline's contracts) */
    if (par->world == 1 && !par->check_own && !rp_par_replica_logged(par)) return RP_OK;
    const size_t n = (size_t)res->B * res->C * res->h * res->w;
    for (int k = 0, e = 0; k <= steps; k++) { /* row 0: the initial noise (or teacher x_0) */
        if (k > 0 && mask && !mask[k - 1]) continue;
        par->fwd_eval = k == 0 ? 0 : e++;
        rp_par_replica_note(ctx, RP_PAR_RG_REPLICA, k == 0 ? "initial_noise" : "latents", res->trajectory + k * n, n);
    }
    char kernels[96];
    snprintf(kernels, sizeof kernels, "%.40s/%.50s", rp_blas_core_loaded(), device);
    rp_par_replica_report rep;
    RP_TRY(rp_par_replica_collect(par, kernels, &rep, err));
    if (par->rank != 0) return RP_OK;
    cJSON *j = cJSON_CreateObject(), *fd = NULL;
    if (!j) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    cJSON_AddNumberToObject(j, "checked", (double)rep.checked);
    if (par->rotated) cJSON_AddBoolToObject(j, "rotated", 1); /* the run's layout (rp_par_rotate) */
    int step = rep.first.eval; /* the eval-th step the run made */
    for (int k = 0, e = 0; mask && k < steps; k++)
        if (mask[k] && e++ == rep.first.eval) step = k;
    /* the gather's row r: the state after step r - 1 (row 0, the noise: step 0); the final
     * latents and the images: after the last step */
    const int gstep = gather->row < 0 ? -1 : gather->row == 0 ? 0 : gather->row <= steps ? gather->row - 1 : steps;
    if (gather->row >= 0 && (rep.first.eval < 0 || gstep < step)) {
        static const char *const PART[] = {"initial_noise", "latents", "final latents", "images"};
        const int part = gather->row == 0 ? 0 : gather->row <= steps ? 1 : gather->row - steps + 1;
        fd = cJSON_AddObjectToObject(j, "first_difference");
        cJSON_AddNumberToObject(fd, "step", gstep);
        cJSON_AddStringToObject(fd, "tensor", PART[part]);
        cJSON_AddStringToObject(fd, "group", "gather");
        cJSON *r = cJSON_AddArrayToObject(fd, "ranks");
        cJSON_AddItemToArray(r, cJSON_CreateNumber(gather->rank));
        cJSON_AddItemToArray(r, cJSON_CreateNumber(0));
        cJSON_AddNumberToObject(fd, "dp_group", gather->group);
    } else if (rep.first.eval >= 0) {
        fd = cJSON_AddObjectToObject(j, "first_difference");
        cJSON_AddNumberToObject(fd, "step", step);
        cJSON_AddStringToObject(fd, "tensor", rep.first.name);
        cJSON_AddStringToObject(fd, "group", rp_par_rgroup_name(rep.first.group));
        cJSON *r = cJSON_AddArrayToObject(fd, "ranks");
        cJSON_AddItemToArray(r, cJSON_CreateNumber(rep.first.rank_a));
        cJSON_AddItemToArray(r, cJSON_CreateNumber(rep.first.rank_b));
        if (rep.first.other[0]) cJSON_AddStringToObject(fd, "other", rep.first.other);
    } else {
        cJSON_AddNullToObject(j, "first_difference");
    }
    if (rep.unchecked[0]) cJSON_AddStringToObject(j, "unchecked", rep.unchecked);
    char *text = cJSON_Print(j), path[4200];
    cJSON_Delete(j);
    if (!text) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    rp_store_path(path, sizeof path, dir, RP_ART_REPLICAS);
    rp_status st = write_atomic(path, text, err);
    free(text);
    return st;
}

/* The leak check's second call: how many steps it evaluates where it has no other reason
 * to run (the standalone --leak-check's other case before the case; the sweep's check of a
 * case bitwise its reference's, after it). State a call leaves behind (a cache, a step
 * counter, a sampler's history) is read by the next call's first steps; a full-length
 * second call would double the cost of such a case for little more evidence. */
#define RP_LEAK_CHECK_STEPS 4

/* --leak-check: another case in this process first — the same layout and request with
 * every seed + 1, and at most RP_LEAK_CHECK_STEPS sampling steps — so state one call
 * leaves behind shows in the case's bits. */
static rp_status leak_prelude(const rp_gen_request *req, const rp_ctx *ctx, rp_error *err) {
    rp_gen_item *items = malloc(sizeof *items * (size_t)req->n_items);
    if (!items) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
    for (int i = 0; i < req->n_items; i++) {
        items[i] = req->items[i];
        items[i].seed += 1;
    }
    rp_gen_request other = *req;
    rp_ctx quiet = *ctx;
    other.items = items;
    if (other.steps > RP_LEAK_CHECK_STEPS) other.steps = RP_LEAK_CHECK_STEPS;
    other.decode = 0;
    other.teacher = NULL;
    quiet.trace = NULL;
    rp_gen_result res;
    rp_status st = rp_generate(&other, &quiet, &res, err);
    rp_gen_result_free(&res);
    free(items);
    return st;
}

/* ---- one launch: the case's run, then the classifier's runs in the same process ---- */

/* What one rank keeps across the runs of one launch: the case, its numerics, the
 * communicator and its groups, the dp items and the device. */
typedef struct job {
    const rp_rankenv *re;
    const rp_job_case_opts *o;
    rp_case *c;
    rp_ctx ctx;               /* the case's; runs copy it (twins change the rounding) */
    rp_parallel par;
    rp_family fam;
    rp_sampler_kind sk;
    rp_inject_id fault;
    int host_check;
    const char *dev_name;
    rp_model_cache models;    /* the denoiser, loaded by the launch's first run, kept for the others */
    rp_gen_item *local;       /* (count) this dp group's items */
    const rp_gen_item *all;   /* (n_all) the run's items (rank 0's list, shared) */
    int n_all, first, count;
    double t_start;           /* the process's start */
    double t_setup, t_rendezvous;
} job;

/* One run of the launch. */
typedef struct run_spec {
    const rp_case *c;         /* the case as run (a twin: its rounding changed) */
    const char *out_dir;      /* rank 0 writes here */
    const char *teacher_ref;  /* teacher forcing from this directory's trajectory; NULL: free */
    int perturb_noise;        /* one ulp in each item's initial noise (a twin) */
    int leak_prelude;         /* another case first (the standalone leak check) */
    int leak_steps;           /* with teacher_ref: only the first leak_steps steps, every one of them (the
                                 sweep's leak check of a case with no teacher run); 0: as asked */
    int decode;               /* decode the images (each dp group's leader) */
    int decode_ref;           /* with teacher_ref: the teacher-forced steps, then the reference's final
                                 latents decoded with this layout into out_dir's images (the
                                 images' teacher forcing in the same run) */
    int check_own;            /* the own check of the arithmetic no exact comparison runs (the default
                                 ring's merge, the default attention variants: parallel.h
                                 RP_PAR_RG_OWN), into the replica check */
    const rp_case *decode_as; /* with decode_ref: the decoder's arithmetic is this case's
                                 (rp_cls_decode_as); NULL: c's */
    int untraced;             /* with teacher_ref: the steps only, no layer trace (a run whose
                                 evidence is its steps' bits) */
    int fresh_kv;             /* with teacher_ref, an approximate layout's invariant shadow: also its
                                 first step after warmup, with fresh keys (rp_parallel.fresh_kv,
                                 rp_cls_shadow_steps) */
    int decode_only;          /* with teacher_ref and decode_ref: no step runs (the trajectory is the
                                 reference's), only the decode of its final latents */
    int rotated;              /* in the rotated layout (rp_par_rotate: every group's data one rank on;
                                 no decode) */
} run_spec;

/* Runs s on this rank with the items selected now: generate (with the case's layout), check
 * the replicas, gather to rank 0, which writes s->out_dir (teacher mode: teacher.safetensors
 * and the trace of every evaluation; else the case's outputs). Collective over the world. */
static rp_status job_run_items(job *J, const run_spec *s, rp_error *err);

/* In the rotated layout the items are selected again: the dp group this rank computes
 * changes with its position (rp_par_dp_select reads it); back in the plain one, again. */
static rp_status job_select(job *J, rp_error *err) {
    RP_TRY(rp_par_dp_select(&J->par, J->all, J->n_all, J->local, &J->first, &J->count, err));
    for (int i = 0; i < J->count; i++) J->local[i].embed_row = J->first + i; /* the case's item i: row i */
    return RP_OK;
}

/* job_run_items, in the rotated layout when s->rotated (back in the plain one after, the
 * items selected for each). */
static rp_status job_run(job *J, const run_spec *s, rp_error *err) {
    if (!s->rotated) return job_run_items(J, s, err);
    RP_TRY(rp_par_rotate(&J->par, 1, err));
    rp_status st = job_select(J, err);
    if (st == RP_OK) st = job_run_items(J, s, err);
    rp_error e;
    rp_status st2 = rp_par_rotate(&J->par, 0, &e);
    if (st2 == RP_OK) st2 = job_select(J, &e);
    if (st == RP_OK && st2 != RP_OK) *err = e, st = st2;
    return st;
}

static rp_status job_run_items(job *J, const run_spec *s, rp_error *err) {
    const rp_case *c = s->c;
    const int main_run = s->out_dir == J->o->out_dir; /* the launch's own run: timed from the start */
    const double t_run = main_run ? J->t_start : rp_now_s();
    double t[8] = {0}; /* setup, rendezvous, encode, sample, decode, gather, write, total */
    if (main_run) t[0] = J->t_setup, t[1] = J->t_rendezvous;
    rp_ctx ctx;
    RP_TRY(case_ctx(c, &ctx, err));
    ctx.dev = J->ctx.dev;
    ctx.par = &J->par;
    ctx.models = &J->models;
    rp_ctx_apply(&ctx); /* a twin's thread count; the case's again for the next run */
    rp_trace trace;
    rp_trace_init(&trace);
    ctx.trace = &trace; /* every rank: the trace points are collective; rank 0's is saved */
    rp_ctx_trace_notes(&ctx, &trace);
    rp_par_trace_notes(&J->par, &trace);
    rp_trace_note(&trace, "device", J->dev_name);
    if (J->host_check) rp_trace_note(&trace, "device.check", "host-check");
    if (rp_device_name_is_cuda(c->device)) {
        rp_trace_note(&trace, "device.precision", c->precision);
        rp_trace_note(&trace, "device.gpu_mode", c->gpu_mode);
    }
    {
        char v[256];
        rp_trace_note(&trace, "parallel.layout", layout_str(c, v, sizeof v));
        rp_trace_note(&trace, "parallel.exactness", rp_par_exactness_name(rp_case_exactness(c)));
        rp_trace_note(&trace, "parallel.backend", c->backend);
        if (J->fault != RP_INJECT_NONE) rp_trace_note(&trace, "parallel.inject", c->inject);
        if (rp_case_exactness(c) == RP_PAR_WARMUP_EXACT) {
            snprintf(v, sizeof v, "%d", c->warmup_steps);
            rp_trace_note(&trace, "parallel.warmup_steps", v);
        }
        if (rp_case_pipeline_patches(c)) /* the patches and stages run apart: no collective trace */
            rp_trace_note(&trace, "parallel.trace", "off: pipefusion stages run different blocks");
    }
    rp_gen_request req;
    rp_case_gen_request(c, &req);
    req.sampler = J->sk;
    req.n_items = J->count;
    req.items = J->local;
    req.decode = s->decode && !s->rotated && J->par.replica.pos == 0; /* each dp group's leader decodes its items */
    req.perturb_noise = s->perturb_noise;
    float *teacher = NULL;       /* this rank's items of the reference trajectory */
    rp_ctx dctx;                 /* with s->decode_as: the decoder's (req.decode_ctx) */
    unsigned char *tmask = NULL; /* (steps) the teacher steps */
    rp_gen_result res, gathered;
    memset(&res, 0, sizeof res);
    memset(&gathered, 0, sizeof gathered);
    rp_status st = RP_OK;
    rp_par_replica_free(&J->par); /* each run's replica check is its own */
    J->par.check_own = s->check_own;
    if (s->teacher_ref) {
        /* the approximate strategies (stale activations: state across steps) and the
         * timestep fault key their state by the evaluation index, so there every step runs
         * (up to the last one checked: rp_cls_teacher_mask) */
        const int every =
            rp_case_exactness(c) == RP_PAR_WARMUP_EXACT || J->fault == RP_INJECT_TIMESTEP_SKEW;
        if (!(tmask = calloc((size_t)c->steps, 1))) st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory");
        /* an approximate layout's invariant shadow: its first step after warmup too, with
         * fresh keys (rp_cls_shadow_steps) */
        J->par.fresh_kv = s->fresh_kv;
        int upto = s->fresh_kv ? rp_cls_shadow_steps(c) : rp_cls_exact_steps(c); /* the mask's last step + 1 */
        if (s->leak_steps && s->leak_steps < upto) upto = s->leak_steps;
        const int multistep = rp_family_ops_of(J->fam)->cond == RP_COND_CLASS && J->sk == RP_SAMPLER_DPMPP_2M;
        if (st == RP_OK)
            trace.record_evals = rp_cls_teacher_mask(c->steps, upto, every || s->leak_steps ? 0 : J->o->teacher_steps,
                                                     multistep, tmask);
        char id[32];
        rp_case_id(c, id);
        const uint64_t h = rp_fnv1a64(id);
        /* and its last step, where a fault keyed to a later step or timestep acts, and one step
         * between the first after warmup and the last drawn from the case's id (a sweep's
         * cases cover the middle steps, as the own checks' middle evaluation does): with fresh
         * keys a step carries no strategy state, so each runs alone (not after a multistep
         * sampler's gap, whose step reads the one before) */
        if (st == RP_OK && s->fresh_kv && !multistep && !s->leak_steps) {
            const int mid = c->steps - 1 - upto; /* steps strictly between upto - 1 and the last */
            const int extra[2] = {c->steps - 1, mid > 0 ? upto + (int)((h >> 17) % (uint64_t)mid) : -1};
            for (int i = 0; i < 2; i++)
                if (extra[i] >= 0 && !tmask[extra[i]]) {
                    tmask[extra[i]] = 1;
                    trace.record_evals++;
                }
        }
        if (s->untraced) trace.record_evals = 0;
        if (st == RP_OK && s->decode_only) {
            memset(tmask, 0, (size_t)c->steps);
            trace.record_evals = 0;
        }
        /* the own checks whole at the run's first and last evaluation and one between them
         * drawn from the case's id (rp_par_own_now): a sweep's cases cover the middle steps */
        int evals = 0;
        for (int k = 0; st == RP_OK && k < c->steps; k++) evals += tmask[k] != 0;
        J->par.own_at[0] = 0;
        J->par.own_at[1] = evals > 0 ? evals - 1 : 0;
        J->par.own_at[2] = evals > 2 ? 1 + (int)(h % (uint64_t)(evals - 2)) : 0;
        if (st == RP_OK) st = teacher_load(s->teacher_ref, c->steps, J->n_all, J->first, J->count, &teacher, err);
        req.teacher = teacher;
        req.teacher_steps = tmask;
        req.decode = s->decode_ref && !s->rotated && J->par.replica.pos == 0;
        req.decode_teacher_final = s->decode_ref;
        if (st == RP_OK && s->decode_ref && s->decode_as) { /* the arithmetic only: ctx's path */
            rp_ctx a;
            st = case_ctx(s->decode_as, &a, err);
            dctx = ctx;
            dctx.precision = a.precision;
            dctx.numerics = a.numerics;
            dctx.attn = a.attn;
            dctx.device = a.device;
            dctx.reduce_split = a.reduce_split;
            dctx.threads = a.threads;
            req.decode_ctx = &dctx;
        }
    }
    if (st == RP_OK && s->leak_prelude) {
        st = leak_prelude(&req, &ctx, err);
        rp_par_replica_free(&J->par); /* the replica check is the case's own */
    }
    if (st == RP_OK) st = rp_generate(&req, &ctx, &res, err);
#ifdef REPRO_HAVE_CUDA
    rp_device_cuda_trace_notes(ctx.dev, &trace); /* GEMM algorithms and attention kernel (cuda only) */
#endif
    if (st == RP_OK) {
        t[2] = res.encode_seconds;
        t[3] = res.sample_seconds;
        t[4] = res.decode_seconds;
    }
    /* ---- results to rank 0, in input order, checked against what each group holds ---- */
    const double t5 = rp_now_s();
    rp_par_gather_report gather;
    if (st == RP_OK) st = rp_par_dp_gather(&J->par, &res, J->n_all, &gathered, err);
    if (st == RP_OK) st = rp_par_dp_gather_check(&J->par, &res, &gathered, &gather, err);
    t[5] = rp_now_s() - t5;
    if (st == RP_OK)
        st = replica_check(s->out_dir, &J->par, &ctx, &res, c->steps, s->teacher_ref ? tmask : NULL, &gather,
                           J->dev_name, err);
    if (st == RP_OK && J->par.rank == 0 && s->teacher_ref)
        st = write_teacher(s->out_dir, c, &gathered, tmask, s->teacher_ref, &trace, &J->par, J->dev_name, t, t_run,
                           err);
    else if (st == RP_OK && J->par.rank == 0)
        st = write_outputs(s->out_dir, c, &gathered, &trace, &J->par, J->dev_name, t, t_run, err);
    J->par.check_own = 0;
    J->par.fresh_kv = 0;
    J->par.own_at[0] = J->par.own_at[1] = J->par.own_at[2] = 0;
    rp_gen_result_free(&gathered);
    rp_gen_result_free(&res);
    rp_trace_free(&trace);
    free(teacher);
    free(tmask);
    return st;
}

/* Agreement after a run: every rank's status, so all go on or all stop together (a
 * classifier run that failed on one rank must not leave the others in a collective). */
static rp_status job_agree(job *J, rp_status mine, rp_error *err) {
    if (J->par.world == 1) return mine;
    float f = mine == RP_OK ? 0.0f : 1.0f;
    rp_error e;
    rp_comm *c = J->par.world_comm;
    rp_status st = c->ops->allreduce(c, &f, 1, RP_REDUCE_MAX, &e);
    if (st != RP_OK) {
        if (mine == RP_OK) *err = e;
        return mine != RP_OK ? mine : st;
    }
    if (mine == RP_OK && f != 0.0f) {
        RP_FAIL(err, RP_ERR_COMM, "another rank failed in this run (its stderr has the reason)");
        return RP_ERR_COMM;
    }
    return mine;
}

/* One of the classifier's runs of the launch into dir (created by rank 0 with `c` as its
 * case.json when save_case), its end recorded in dir/aux.json (rp_cls_write_aux). Returns
 * 0 when it finished ok on every rank, else 1 (the launch goes on with its case's result;
 * the classifier reports the failed run). */
static int job_aux(job *J, const char *kind, const run_spec *s, int save_case) {
    const double t0 = rp_now_s();
    rp_error err;
    rp_error_clear(&err);
    rp_status st = RP_OK;
    if (J->par.rank == 0) {
        st = make_dir(s->out_dir, &err);
        char p[4200];
        rp_store_path(p, sizeof p, s->out_dir, RP_ART_CASE);
        if (st == RP_OK && save_case) st = rp_case_save(s->c, p, &err);
    }
    if ((st = job_agree(J, st, &err)) == RP_OK) st = job_run(J, s, &err);
    st = job_agree(J, st, &err);
    if (J->par.rank == 0)
        rp_cls_write_aux(s->out_dir, kind,
                         st == RP_OK ? "ok" : rp_exhausted_text(err.msg) ? "INFRA_ERROR" : "CRASH", /* the machine's */
                         st == RP_OK ? "" : err.msg, rp_now_s() - t0);
    if (st != RP_OK) {
        rp_error e = err;
        snprintf(e.msg, sizeof e.msg, "worker rank %d/%d (%s run): %.960s", J->re->rank, J->re->world, kind, err.msg);
        rp_report_error(&e);
    }
    return st != RP_OK;
}

/* Rank 0's answer (yes), shared with every rank: decisions on files only rank 0 reads
 * the same way (0 when the broadcast fails). */
static int job_rank0_says(job *J, int yes) {
    float v = yes ? 1.0f : 0.0f;
    if (J->par.world > 1) {
        rp_error e;
        rp_comm *c = J->par.world_comm;
        if (c->ops->broadcast(c, &v, sizeof v, 0, &e) != RP_OK) return 0;
    }
    return v != 0.0f;
}

/* The rounding twins of case c (a reference; rp_cls_twin_list with the option n) into
 * <prefix>/twins/<name>/. A twin
 * with other arithmetic runs teacher-forced only (from the reference's trajectory in tref): its
 * step 0 starts from the same x_T as a free run, so its first evaluation is the free run's,
 * and its one-step errors are what the envelope needs; its free trajectory (amplified
 * rounding) is not evidence. A twin that moves the noise runs free when free_noise (its
 * teacher run would repeat the reference's own). A failed twin is recorded in its aux.json
 * (the classifier reports it) and the others still run: no twin rests on another, and
 * nothing after them rests on the twins (a GPU reference once lost its invariant shadow to
 * a twin whose attention the device has no kernel for). */
static void job_twins(job *J, const rp_case *c, int n, const char *prefix, int free_noise, const char *tref) {
    char dir[4200], tdir[4200];
    int kinds[RP_CLS_TWIN_KINDS];
    const int nk = rp_cls_twin_list(c, n, kinds);
    for (int i = 0; i < nk; i++) {
        const int k = kinds[i];
        rp_case tc;
        int noise = 0;
        rp_cls_twin_case(c, k, &tc, &noise);
        rp_store_twin_dir(dir, sizeof dir, prefix, rp_cls_twin_name(k));
        if (noise && free_noise) {
            const run_spec tw = {.c = &tc, .out_dir = dir, .perturb_noise = noise};
            if (job_aux(J, rp_cls_twin_name(k), &tw, 1)) continue; /* its own teacher run too */
        }
        if (!rp_cls_twin_other_math(k)) continue; /* the noise alone */
        rp_store_subdir(tdir, sizeof tdir, dir, RP_SUB_TEACHER);
        const run_spec tt = {.c = &tc, .out_dir = tdir, .teacher_ref = tref};
        (void)job_aux(J, "teacher", &tt, 1);
    }
}

/* What the case's relation to the reference in ref_dir spares (rank 0 decides, from the
 * files; every rank gets the answer): *exact_only when they are an invariant pair
 * (rp_cls_invariant_pair: bitwise or a bug, no rounding envelope needed); *decode_ruled when
 * a decode of the reference's final latents with this layout is held to a rule
 * (rp_cls_teacher_decode_rule: not when the decoder rounds coarser than fp32 with other
 * arithmetic; its own images are then checked for assignment only); *decode_own when the
 * same decode is made once more with the case's own decoder arithmetic
 * (rp_cls_own_decode_rule); *decode_shadow when its fp32 shadow ends with that decode
 * (rp_cls_decode_shadow); *decode_as, the case whose decoder arithmetic the teacher decode
 * uses (rp_cls_decode_as). */
static void job_relation(job *J, const char *ref_dir, int *exact_only, int *decode_ruled, int *decode_own,
                         int *decode_shadow, rp_case *decode_as) {
    char p[4200];
    rp_case rc;
    rp_error e;
    rp_store_path(p, sizeof p, ref_dir, RP_ART_CASE);
    const int loaded = J->par.rank == 0 && rp_case_load(p, &rc, &e) == RP_OK;
    *exact_only = job_rank0_says(J, loaded && rp_cls_invariant_pair(J->c, &rc));
    *decode_ruled = job_rank0_says(J, loaded && rp_cls_teacher_decode_rule(J->c, &rc) != RP_CLS_DECODE_NONE);
    *decode_own = job_rank0_says(J, loaded && rp_cls_own_decode_rule(J->c, &rc) != RP_CLS_DECODE_NONE);
    *decode_shadow = job_rank0_says(J, loaded && rp_cls_decode_shadow(J->c, &rc));
    /* the teacher decode's arithmetic (each dp group's leader decodes): rank 0's (plain data) */
    if (!job_rank0_says(J, loaded && rp_cls_decode_as(J->c, &rc, decode_as))) {
        *decode_as = *J->c;
        return;
    }
    rp_comm *c = J->par.world_comm;
    if (J->par.world > 1 && c->ops->broadcast(c, decode_as, sizeof *decode_as, 0, &e) != RP_OK)
        *decode_as = *J->c; /* the run's own collectives will report the broken communicator */
}

/* The classifier's runs the launch was asked for (job_case.h: --then-*), in the order
 * their inputs exist: a reference's twins and its own teacher run, which read the case's
 * trajectory, or a case's teacher run against its reference (ending with the images'
 * teacher forcing); the fp32 shadow of a coarser precision; the invariant shadow. Stops
 * at the first run that fails (recorded in its aux.json). */
static void job_classifier_runs(job *J) {
    const rp_job_case_opts *o = J->o;
    char dir[4200];
    if (J->par.world > 1) { /* rank 0 wrote the case's trajectory: every rank reads it */
        rp_error e;
        rp_comm *c = J->par.world_comm;
        if (c->ops->barrier(c, &e) != RP_OK) return;
    }
    const int own_twins = o->twins_apart ? 0 : o->then_twins; /* the twins this launch runs */
    job_twins(J, J->c, own_twins, o->out_dir, 1, o->out_dir);
    const char *tref = o->then_twins >= 0 ? o->out_dir : o->then_teacher;
    const int rank0 = J->par.rank == 0;
    const int other = tref && tref != o->out_dir; /* a case against its reference */
    const int identical = other && job_rank0_says(J, rank0 && rp_cls_runs_identical(tref, o->out_dir));
    const int teach = tref && !identical;
    /* a reference's --then-twins 0 says no case needs its envelope */
    int exact_only = tref == o->out_dir && o->then_twins == 0, decode_ruled = 0, decode_own = 0, decode_shadow = 0;
    rp_case decode_as = *J->c;
    if (other) job_relation(J, tref, &exact_only, &decode_ruled, &decode_own, &decode_shadow, &decode_as);
    /* The images' teacher forcing: the reference's final latents decoded with this layout
     * (the decoder then sees the reference's input, so its images are evidence of their own),
     * at the end of the teacher run (its images). Not needed when the case's own decode
     * already had that input (its latents are bitwise the reference's: its own images are
     * that decode, whatever arithmetic its decoder uses; the classifier judges them by the
     * rule that arithmetic allows), nor for an invariant pair (whose latents are bitwise or
     * already a bug), nor where no rule would hold the decode (!decode_ruled). */
    char ref_image[4200];
    rp_store_image_path(ref_image, sizeof ref_image, tref ? tref : "", 0);
    const int images =
        other && !exact_only && !identical && decode_ruled && job_rank0_says(J, rank0 && rp_is_file(ref_image));
    /* The self check (--then-leak): every step of a case that differs from its reference
     * again, each from the case's own stored latent, right after the case's run. A correct
     * sampling loop computes each step from the latent it stores, so every step must come
     * back bitwise. The teacher run and the shadows start each step from the reference's
     * latent with fresh state, so they never execute the loop the case's own images came
     * from: a fault in that loop (a sampler's history cleared half-way, a step's dt taken
     * from the step before, a timing-dependent update) would otherwise be drift however far
     * the trajectory went. It is also the leak check's second call, at every step. */
    if (teach && other && o->then_leak) {
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_SELF);
        const run_spec ss = {.c = J->c, .out_dir = dir, .teacher_ref = o->out_dir, .untraced = 1,
                             .rotated = rp_cls_self_rotated(J->c)};
        if (job_aux(J, "self check", &ss, 0)) return;
    }
    /* A case bitwise its reference's has no teacher run: its first steps are teacher-forced
     * anyway (every input is then its own), as the leak check's second call. The teacher run
     * of a case that differs makes the own check (parallel.h RP_PAR_RG_OWN: the default ring,
     * the default attention kernels and GEMMs, recomputed on every rank) at its first and
     * last evaluation; so does its fp32 shadow, where a kernel's fault that bf16 rounding
     * absorbs still shows. A reference's own teacher run (its twins' job) starts every step
     * from its own trajectory: its self check. The bitwise case's leak check runs in the
     * rotated layout, as a self check does (the same steps from the same inputs: bitwise for a
     * correct layout), so rank-keyed code is held whether or not its numerics left the output
     * bitwise. */
    if (teach || (identical && o->then_leak)) {
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_TEACHER);
        const run_spec tt = {.c = J->c, .out_dir = dir, .teacher_ref = tref, .decode_ref = images,
                             .decode_as = &decode_as, .leak_steps = teach ? 0 : RP_LEAK_CHECK_STEPS,
                             .check_own = teach && other, .rotated = !teach && rp_cls_self_rotated(J->c)};
        if (job_aux(J, teach ? "teacher" : "leak check", &tt, 0)) return;
    }
    /* The teacher decode ran the reference's decoder arithmetic (bitwise rule); the code the
     * case's own arithmetic selects in the decoder (its attention variant, reduce_split) then
     * ran only on the case's own latents, which no rule holds. So the reference's final
     * latents are decoded once more with the case's layout and arithmetic, no step run
     * (rp_cls_own_decode_rule: one level at fp32). */
    if (images && decode_own) {
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_DECODE_OWN);
        const run_spec od = {.c = J->c, .out_dir = dir, .teacher_ref = tref, .decode_ref = 1, .untraced = 1,
                             .decode_only = 1};
        if (job_aux(J, "own decode", &od, 0)) return;
    }
    /* The fp32 shadow of a case that rounds coarser (bf16, fp16, tf32): the same layout
     * teacher-forced at fp32 from the same (reference) latents. A layout's bug does not
     * depend on the precision, and at fp32 the rounding envelope is 2^16 times tighter
     * than bf16's, so the shadow shows what bf16 rounding would hide. A reference runs its
     * own shadow teacher run and its twins' (the envelope); a case, its layout's. On the
     * CPU only: a CUDA device is made for one precision. A case bitwise its reference's has
     * no envelope to tighten, but its leak check rounds as coarsely: it runs the shadow's
     * first steps only, as the first call of the leak check at fp32 below.
     * The shadow ends with the decoder's fp32 shadow where one is asked for: a case's, the
     * reference's final latents decoded with its layout and its own decoder arithmetic at fp32
     * (rp_cls_decode_shadow); a reference's (--then-shadow-decode), its own final latents
     * decoded at fp32, which those are held to. */
    const int shadow = rp_cls_has_fp32_shadow(J->c);
    const int shadow_leak_only = identical && o->then_leak;
    if ((teach || shadow_leak_only) && shadow && !exact_only) { /* an invariant pair: no envelope, no leak */
        rp_case sc = *J->c;
        snprintf(sc.precision, sizeof sc.precision, "fp32");
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_SHADOW_TEACHER);
        const run_spec st = {.c = &sc, .out_dir = dir, .teacher_ref = tref,
                             .leak_steps = teach ? 0 : RP_LEAK_CHECK_STEPS, .check_own = teach && other,
                             .decode_ref = other ? decode_shadow : o->then_shadow_decode};
        if (job_aux(J, "shadow teacher", &st, 1)) return;
        /* The leak check at fp32: the shadow's first steps again, after it, from the same
         * input (rp_cls_shadow_rerun_check). A kernel's ulps of state carried between calls,
         * or of a timing-dependent order, are below bf16's rounding and vanish in the case's
         * own bits (its leak check then agrees); at fp32 they stay. */
        if (o->then_leak) {
            rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_SHADOW_LEAK);
            const run_spec sl = {.c = &sc, .out_dir = dir, .teacher_ref = tref, .leak_steps = RP_LEAK_CHECK_STEPS};
            if (job_aux(J, "shadow leak check", &sl, 1)) return;
        }
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_SHADOW);
        if (tref == o->out_dir) job_twins(J, &sc, own_twins, dir, 0, o->out_dir);
    }
    /* The invariant shadow: the layout teacher-forced under invariant numerics, where an
     * exact layout is bitwise the serial run (the reference makes its own from its own
     * trajectory); the runner asks for it where both shadows exist and validate. */
    /* At fp32, and for a coarser case at its own precision too (rp_cls_invariant_shadow_own:
     * the code that precision selects). */
    static const rp_store_sub SUB[2] = {RP_SUB_INVARIANT_TEACHER, RP_SUB_INVARIANT_OWN_TEACHER};
    for (int s = 0; s < 2 && o->then_invariant && (teach || tref == o->out_dir); s++) {
        rp_case ic;
        if (!(s ? rp_cls_invariant_shadow_own(J->c, &ic) : rp_cls_invariant_shadow(J->c, &ic))) continue;
        rp_store_subdir(dir, sizeof dir, o->out_dir, SUB[s]);
        const run_spec it = {.c = &ic, .out_dir = dir, .teacher_ref = tref,
                             .fresh_kv = rp_case_exactness(&ic) == RP_PAR_WARMUP_EXACT};
        if (job_aux(J, "invariant teacher", &it, 1)) return;
    }
}

/* --twins-of: the twins of the reference in o->twins_of (this launch's case, already run and
 * published), as its own launch would have run them after its case (job_classifier_runs),
 * into o->out_dir; then done.json. The runner moves them into the reference's directory. */
static rp_status job_twins_apart(job *J, rp_error *err) {
    const rp_job_case_opts *o = J->o;
    job_twins(J, J->c, o->then_twins, o->out_dir, 1, o->twins_of);
    if (rp_cls_has_fp32_shadow(J->c)) { /* the fp32 shadow's twins: its envelope (job_classifier_runs) */
        rp_case sc = *J->c;
        snprintf(sc.precision, sizeof sc.precision, "fp32");
        char dir[4200];
        rp_store_subdir(dir, sizeof dir, o->out_dir, RP_SUB_SHADOW);
        job_twins(J, &sc, o->then_twins, dir, 0, o->twins_of);
    }
    if (J->par.rank != 0) return RP_OK;
    char p[4200];
    rp_store_path(p, sizeof p, o->out_dir, RP_ART_DONE);
    cJSON *j = cJSON_CreateObject();
    if (!j || !cJSON_AddStringToObject(j, "status", "ok") || !cJSON_AddStringToObject(j, "twins_of", o->twins_of)) {
        cJSON_Delete(j);
        return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for done.json");
    }
    const rp_status st = rp_store_write_json(p, j, err);
    cJSON_Delete(j);
    return st;
}

int rp_job_case(const rp_rankenv *re, const rp_job_case_opts *o) {
    job J;
    memset(&J, 0, sizeof J);
    J.re = re;
    J.o = o;
    J.t_start = rp_now_s();
    rp_error err;
    rp_error_clear(&err);
    rp_case *c = J.c = malloc(sizeof *c);
    if (!c) {
        RP_FAIL(&err, RP_ERR_NOMEM, "out of memory");
        return fail(re, &err, RP_WORKER_EXIT_FAIL);
    }
    rp_status st = rp_case_load(o->case_file, c, &err);
    if (st != RP_OK) {
        free(c);
        return fail(re, &err, RP_WORKER_EXIT_CONFIG); /* a case file no rerun will fix */
    }
#ifdef REPRO_HAVE_CUDA
    /* CUBLAS_WORKSPACE_CONFIG must be in place before the first cuBLAS handle of this
     * process, and listing the GPUs for validation (rp_validate_env_host) creates one */
    if (rp_device_name_is_cuda(c->device) && !strcmp(c->gpu_mode, "deterministic") &&
        (st = rp_cuda_gemm_workspace_config(&err)) != RP_OK) {
        free(c);
        return fail(re, &err, RP_WORKER_EXIT_FAIL);
    }
#endif
    /* ---- configuration: everything a rerun would not fix, before any rank waits ---- */
    rp_validate_env env;
    rp_validate_env_host(&env);
    env.world = re->world;
    rp_comm_kind kind = RP_COMM_SELF;
    J.fam = RP_FAMILY_DIT;
    J.sk = RP_SAMPLER_DDIM;
    st = rp_case_validate(c, &env, &err);
    if (st == RP_OK) st = device_hook(c, &J.host_check, &err);
    if (st == RP_OK) st = rp_comm_kind_parse(c->backend, &kind, &err);
    if (st == RP_OK && o->backend_given && kind != o->comm.kind)
        st = RP_FAIL(&err, RP_ERR_INVALID, "--backend %s but the case says backend=%s",
                     rp_comm_kind_name(o->comm.kind), c->backend);
    if (st == RP_OK) st = rp_inject_parse(c->inject, &J.fault, &err);
    if (st == RP_OK) st = rp_model_family(c->model, &J.fam, &err);
    if (st == RP_OK && rp_family_ops_of(J.fam)->cond == RP_COND_CLASS) st = rp_sampler_parse(c->sampler, &J.sk, &err);
    if (st == RP_OK) st = case_ctx(c, &J.ctx, &err);
    if (st == RP_OK) st = rp_ctx_ensure_coretype(J.ctx.blas_core, NULL, &err); /* may re-execute this rank */
    if (st != RP_OK) {
        free(c);
        return fail(re, &err, rp_worker_exit_code(st) == RP_WORKER_EXIT_FAIL ? RP_WORKER_EXIT_CONFIG : rp_worker_exit_code(st));
    }
    if (re->rank == 0 && (st = make_dir(o->out_dir, &err)) != RP_OK) {
        free(c);
        return fail(re, &err, RP_WORKER_EXIT_FAIL);
    }
    rp_ctx_apply(&J.ctx);
    /* the device (after a possible re-exec above: no GPU context is made twice) */
    rp_device *dev = NULL;
    int ordinal = -1;
    if ((st = make_device(c, J.host_check, re->local_rank, &dev, &ordinal, &err)) != RP_OK) {
        free(c);
        return fail(re, &err, rp_worker_exit_code(st));
    }
    J.ctx.dev = dev;
    J.dev_name = dev ? dev->name : "cpu";
    J.t_setup = rp_now_s() - J.t_start;
    const double t1 = rp_now_s();

    /* ---- communicator and groups ---- */
    rp_comm_opts co = o->comm;
    co.kind = kind;
    co.rank = re->rank;
    co.world = re->world;
    /* The pipeline hands the comm host buffers on every backend (CFG allgather, dp gather,
     * the exchanges staged through the host): gloo and self take them as they are, NCCL
     * through a device scratch on this rank's GPU (backends/comm.h: host_staged). */
    co.mem = RP_MEM_HOST;
    co.host_staged = kind == RP_COMM_NCCL;
    if (ordinal >= 0) co.cuda_device = ordinal;
    char id[32], prefix[64];
    rp_case_id(c, id);
    if (!co.prefix || !strcmp(co.prefix, "worker")) { /* the worker's default: a per-case namespace */
        snprintf(prefix, sizeof prefix, "case-%s", id);
        co.prefix = prefix;
    }
    rp_comm *comm = NULL;
    rp_gen_item *mine = NULL, *all = NULL;
    char *strings = NULL;
    int rc = 0;
    if ((st = rp_comm_create(&co, &comm, &err)) != RP_OK) goto out;
    rp_par_degrees deg;
    rp_case_degrees(c, &deg);
    if ((st = rp_par_init(&J.par, comm, &deg, J.fault, &err)) != RP_OK) goto out;
    if (rp_case_pipeline_patches(c))
        st = rp_par_pipefusion_init(&J.par, rp_case_pipeline_patches(c),
                                    c->pipefusion_layers, c->n_pipefusion_layers, c->warmup_steps, &err);
    else if (c->patch > 1)
        st = rp_par_patch_init(&J.par, c->warmup_steps, &err);
    if (st != RP_OK) goto out;
    J.t_rendezvous = rp_now_s() - t1;

    /* ---- items: rank 0's list, verified everywhere, this dp group's block ---- */
    const int n = c->n_items;
    mine = calloc((size_t)n, sizeof *mine);
    J.local = calloc((size_t)n, sizeof *J.local);
    if (!mine || !J.local) {
        st = RP_FAIL(&err, RP_ERR_NOMEM, "out of memory for %d items", n);
        goto out;
    }
    const int class_cond = rp_family_ops_of(J.fam)->cond == RP_COND_CLASS;
    for (int i = 0; i < n; i++) {
        mine[i].seed = c->items[i].seed;
        mine[i].global_index = (uint64_t)i;
        mine[i].class_id = class_cond ? c->items[i].class_id : 0;
        mine[i].prompt = class_cond ? NULL : c->items[i].prompt;
    }
    if ((st = rp_par_dp_share_items(&J.par, mine, n, &all, &J.n_all, &strings, &err)) != RP_OK) goto out;
    J.all = all;
    if ((st = job_select(&J, &err)) != RP_OK) goto out;

    if (o->twins_of) { /* a reference's twins alone, its case run in another launch */
        st = job_twins_apart(&J, &err);
        goto out;
    }
    /* ---- the case's run (or one classifier run by itself: --teacher-force, --leak-check) ---- */
    /* the launch's first call: with --then-leak, a later run recomputes steps from this run's
     * own input after it (rp_cls_rerun_check), so its bits are those of a fresh process */
    const run_spec main_run = {.c = c, .out_dir = o->out_dir, .teacher_ref = o->teacher_ref,
                               .perturb_noise = o->perturb_noise, .leak_prelude = o->leak_check,
                               .decode = !o->teacher_ref && !o->leak_check && !o->no_images, .rotated = o->rotate};
    if ((st = job_run(&J, &main_run, &err)) != RP_OK) goto out;
    /* ---- then the classifier's runs, in this process: no launch, rendezvous or load each ---- */
    if (o->then_twins >= 0 || o->then_teacher || o->then_invariant) job_classifier_runs(&J);

out:
    if (st != RP_OK) rc = fail(re, &err, rp_worker_exit_code(st));
    free(mine);
    free(J.local);
    free(all);
    free(strings);
    rp_model_cache_free(&J.models);
    rp_par_free(&J.par);
    rp_comm_destroy(comm);
    rp_device_destroy(dev); /* after everything that may hold device memory */
    free(c);
    return rc;
}
