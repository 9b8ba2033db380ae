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
#include "engine/ctx.h"
#include "engine/device.h"
#include "engine/fsutil.h"
#include "engine/image.h"
#include "engine/parallel/parallel.h"
#include "engine/pipeline.h"
#include "engine/safetensors.h"
#include "engine/samplers/samplers.h"
#include "engine/trace.h"
#include "harness/case.h"
#include "harness/classify.h"
#include "harness/commands.h"
#include "harness/env.h"
#include "harness/launch.h"
#include "harness/validate.h"
#ifdef REPRO_HAVE_CUDA
#include "engine/cuda/device_cuda.h"
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
    snprintf(buf, cap, "dp=%d cfg=%d pipefusion=%d ulysses=%d ring=%d patch=%d", c->dp, c->cfg_parallel,
             c->pipefusion, c->ulysses, c->ring, c->patch);
    return buf;
}

/* latents.safetensors: as `repro generate --latents`, plus the case. */
static rp_status write_latents(const char *path, const rp_case *c, const char *id, const rp_gen_result *r,
                               rp_error *err) {
    rp_st_writer *w = rp_st_writer_new();
    if (!w) return RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the latents writer");
    const int B = r->B, flow = r->family != RP_FAMILY_DIT;
    const int64_t lat[4] = {B, r->C, r->h, r->w}, traj[5] = {r->steps + 1, B, r->C, r->h, r->w};
    const int64_t nsteps[1] = {r->steps}, nsig[1] = {r->steps + 1}, nb[1] = {B};
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
    TRY(rp_st_writer_add(w, "noise", RP_DT_F32, 4, lat, r->noise, err));
    TRY(rp_st_writer_add(w, "latents", RP_DT_F32, 4, lat, r->latents, err));
    TRY(rp_st_writer_add(w, "trajectory", RP_DT_F32, 5, traj, r->trajectory, err));
    TRY(rp_st_writer_add(w, "timesteps", RP_DT_F64, 1, nsteps, r->timesteps, err));
    if (flow) {
        TRY(rp_st_writer_add(w, "sigmas", RP_DT_F64, 1, nsig, r->sigmas, err));
        TRY(rp_st_writer_add(w, "model_timesteps", RP_DT_F64, 1, nsteps, r->model_t, err));
    } else {
        TRY(rp_st_writer_add(w, "alphas_cumprod", RP_DT_F64, 1, nsteps, r->alphas_cumprod, err));
        TRY(rp_st_writer_add(w, "classes", RP_DT_I64, 1, nb, classes, err));
    }
    TRY(rp_st_writer_add(w, "seeds", RP_DT_I64, 1, nb, seeds, err));
    TRY(rp_st_writer_add(w, "global_index", RP_DT_I64, 1, nb, gidx, err));
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
    cJSON_AddNumberToObject(lay, "dp", c->dp);
    cJSON_AddNumberToObject(lay, "cfg_parallel", c->cfg_parallel);
    cJSON_AddNumberToObject(lay, "pipefusion", c->pipefusion);
    cJSON_AddNumberToObject(lay, "ulysses", c->ulysses);
    cJSON_AddNumberToObject(lay, "ring", c->ring);
    cJSON_AddNumberToObject(lay, "patch", c->patch);
    if (c->pipefusion > 1 || c->patch > 1) { /* the approximate strategies: exact only in warmup */
        cJSON_AddNumberToObject(lay, "warmup_steps", c->warmup_steps);
        if (c->pipefusion > 1) {
            cJSON_AddNumberToObject(lay, "num_pipeline_patch", c->num_pipeline_patch ? c->num_pipeline_patch
                                                                                      : c->pipefusion);
            cJSON_AddItemToObject(lay, "pipefusion_layers",
                                  cJSON_CreateIntArray(c->pipefusion_layers, c->n_pipefusion_layers));
        }
    }
    cJSON_AddItemToObject(j, "layout", lay);
    /* steps [0, exact_steps) are exact by the layout's contract (all of them for exact layouts) */
    cJSON_AddNumberToObject(j, "exact_steps", rp_par_layout_exactness(&par->deg) == RP_PAR_EXACT
                                                  ? r->steps : (c->warmup_steps < r->steps ? c->warmup_steps
                                                                                           : r->steps));
    cJSON_AddStringToObject(j, "exactness", rp_par_exactness_name(rp_par_layout_exactness(&par->deg)));
    cJSON *strat = cJSON_AddArrayToObject(j, "strategies");
    const rp_par_strategy_info *used[5];
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

/* Rank 0: every output file, done.json last. */
static rp_status write_outputs(const char *dir, const rp_case *c, const rp_gen_result *r, const rp_trace *trace,
                               const rp_parallel *par, const char *device, double *t, double t_start, rp_error *err) {
    const double t0 = now_s();
    char id[32], path[4200];
    rp_case_id(c, id);
    snprintf(path, sizeof path, "%s/latents.safetensors", dir);
    RP_TRY(write_latents(path, c, id, r, err));
    if (r->rgb) {
        const size_t per = (size_t)r->H * r->W * 3;
        for (int i = 0; i < r->B; i++) {
            snprintf(path, sizeof path, "%s/image-%d.png", dir, i);
            RP_TRY(rp_png_write(path, r->rgb + i * per, r->W, r->H, err));
        }
    }
    snprintf(path, sizeof path, "%s/trace.safetensors", dir);
    RP_TRY(rp_trace_save(trace, path, err));
    snprintf(path, sizeof path, "%s/env.json", dir);
    RP_TRY(rp_env_write(path, err));
    t[6] = now_s() - t0;
    t[7] = now_s() - t_start;
    snprintf(path, sizeof path, "%s/done.json", dir);
    return write_done(path, c, id, r, par, device, t, err);
}

/* ---- the classifier's runs (job_case.h) ---- */

/* Teacher forcing's input: ref_dir/latents.safetensors's trajectory (steps + 1, n_all, C, h,
 * w), items [first, first + count) of it into *out (steps + 1, count, C, h, w; malloc'd). */
static rp_status teacher_load(const char *ref_dir, int steps, int n_all, int first, int count, float **out,
                              rp_error *err) {
    char path[4200];
    snprintf(path, sizeof path, "%.4000s/latents.safetensors", ref_dir);
    rp_st_file *f = NULL;
    RP_TRY(rp_st_open(path, &f, err));
    const rp_st_tensor *t = rp_st_find(f, "trajectory");
    rp_status st = RP_OK;
    if (!t || t->ndim != 5 || t->shape[0] != steps + 1 || t->shape[1] != n_all)
        st = RP_FAIL(err, RP_ERR_INVALID, "--teacher-force %s: needs a trajectory of %d steps and %d items (got %s)",
                     ref_dir, steps, n_all, t ? "another shape" : "none");
    float *all = NULL;
    size_t per = 0;
    if (st == RP_OK) {
        per = (size_t)(t->shape[2] * t->shape[3] * t->shape[4]);
        all = malloc(sizeof(float) * t->numel);
        *out = malloc(sizeof(float) * (size_t)(steps + 1) * count * per);
        if (!all || !*out) st = RP_FAIL(err, RP_ERR_NOMEM, "out of memory for the teacher trajectory");
    }
    if (st == RP_OK) st = rp_st_read_f32(f, "trajectory", 5, t->shape, all, err);
    for (int k = 0; st == RP_OK && k <= steps; k++) /* row k: this rank's items, in order */
        memcpy(*out + (size_t)k * count * per, all + ((size_t)k * n_all + first) * per, sizeof(float) * count * per);
    rp_st_close(f);
    free(all);
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
    if (st == RP_OK) st = rp_st_writer_meta(w, "repro.format", "teacher-v1", err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "case_id", id, err);
    if (st == RP_OK) st = rp_st_writer_meta(w, "teacher_reference", ref_dir, err);
    snprintf(path, sizeof path, "%.4000s/teacher.safetensors", dir);
    if (st == RP_OK) st = rp_st_writer_write(w, path, err);
    rp_st_writer_free(w);
    free(steps);
    snprintf(path, sizeof path, "%.4000s/trace.safetensors", dir);
    if (st == RP_OK) st = rp_trace_save(trace, path, err);
    snprintf(path, sizeof path, "%.4000s/env.json", dir);
    if (st == RP_OK) st = rp_env_write(path, err);
    t[7] = now_s() - t_start;
    snprintf(path, sizeof path, "%.4000s/done.json", dir);
    return st == RP_OK ? write_done(path, c, id, r, par, device, t, err) : st;
}

/* --leak-check: another case in this process first — the same layout and request with
 * every seed + 1, and at most RP_LEAK_PRELUDE_STEPS sampling steps — so state one call
 * leaves behind shows in the case's bits. Any state a call leaves (a cache, a step counter,
 * a sampler's history) is written by its first steps; a full-length prelude would double
 * the cost of every classified case for no extra evidence. */
#define RP_LEAK_PRELUDE_STEPS 4
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
    if (other.steps > RP_LEAK_PRELUDE_STEPS) other.steps = RP_LEAK_PRELUDE_STEPS;
    other.decode = 0;
    other.teacher = NULL;
    quiet.trace = NULL;
    rp_gen_result res;
    rp_status st = rp_generate(&other, &quiet, &res, err);
    rp_gen_result_free(&res);
    free(items);
    return st;
}

int rp_job_case(const rp_rankenv *re, const rp_job_case_opts *o) {
    const double t_start = now_s();
    double t[8] = {0}; /* setup, rendezvous, encode, sample, decode, gather, write, total */
    rp_error err;
    rp_error_clear(&err);
    rp_case *c = malloc(sizeof *c);
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
    rp_ctx ctx;
    rp_comm_kind kind = RP_COMM_SELF;
    rp_inject_id fault = RP_INJECT_NONE;
    rp_family fam = RP_FAMILY_DIT;
    rp_sampler_kind sk = RP_SAMPLER_DDIM;
    int host_check = 0;
    st = rp_case_validate(c, &env, &err);
    if (st == RP_OK) st = device_hook(c, &host_check, &err);
    if (st == RP_OK) st = rp_comm_kind_parse(c->backend, &kind, &err);
    if (st == RP_OK && o->backend_given && kind != o->comm.kind)
        st = RP_FAIL(&err, RP_ERR_INVALID, "--backend %s but the case says backend=%s",
                     rp_comm_kind_name(o->comm.kind), c->backend);
    if (st == RP_OK) st = rp_inject_parse(c->inject, &fault, &err);
    if (st == RP_OK) st = rp_model_family(c->model, &fam, &err);
    if (st == RP_OK && fam == RP_FAMILY_DIT) st = rp_sampler_parse(c->sampler, &sk, &err);
    if (st == RP_OK) st = case_ctx(c, &ctx, &err);
    if (st == RP_OK) st = rp_ctx_ensure_coretype(ctx.blas_core, NULL, &err); /* may re-execute this rank */
    if (st != RP_OK) {
        free(c);
        return fail(re, &err, rp_worker_exit_code(st) == RP_WORKER_EXIT_FAIL ? RP_WORKER_EXIT_CONFIG : rp_worker_exit_code(st));
    }
    if (re->rank == 0 && (st = make_dir(o->out_dir, &err)) != RP_OK) {
        free(c);
        return fail(re, &err, RP_WORKER_EXIT_FAIL);
    }
    rp_ctx_apply(&ctx);
    /* the device (after a possible re-exec above: no GPU context is made twice) */
    rp_device *dev = NULL;
    int ordinal = -1;
    if ((st = make_device(c, host_check, re->local_rank, &dev, &ordinal, &err)) != RP_OK) {
        free(c);
        return fail(re, &err, rp_worker_exit_code(st));
    }
    ctx.dev = dev;
    t[0] = now_s() - t_start;

    /* ---- communicator and groups ---- */
    double t1 = now_s();
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
    rp_parallel par;
    memset(&par, 0, sizeof par);
    rp_gen_item *mine = NULL, *all = NULL, *local = NULL;
    char *strings = NULL;
    rp_gen_result res, gathered;
    memset(&res, 0, sizeof res);
    memset(&gathered, 0, sizeof gathered);
    rp_trace trace;
    rp_trace_init(&trace);
    float *teacher = NULL;       /* --teacher-force: this rank's items of the reference trajectory */
    unsigned char *tmask = NULL; /* (steps) the teacher steps */
    int rc = 0;
    if ((st = rp_comm_create(&co, &comm, &err)) != RP_OK) goto out;
    const rp_par_degrees deg = {c->dp, c->cfg_parallel, c->pipefusion, c->ulysses, c->ring, c->patch};
    if ((st = rp_par_init(&par, comm, &deg, fault, &err)) != RP_OK) goto out;
    if (c->pipefusion > 1)
        st = rp_par_pipefusion_init(&par, c->num_pipeline_patch ? c->num_pipeline_patch : c->pipefusion,
                                    c->pipefusion_layers, c->n_pipefusion_layers, c->warmup_steps, &err);
    else if (c->patch > 1)
        st = rp_par_patch_init(&par, c->warmup_steps, &err);
    if (st != RP_OK) goto out;
    t[1] = now_s() - t1;

    /* ---- items: rank 0's list, verified everywhere, this dp group's block ---- */
    const int n = c->n_items;
    mine = calloc((size_t)n, sizeof *mine);
    local = calloc((size_t)n, sizeof *local);
    if (!mine || !local) {
        st = RP_FAIL(&err, RP_ERR_NOMEM, "out of memory for %d items", n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        mine[i].seed = c->items[i].seed;
        mine[i].global_index = (uint64_t)i;
        mine[i].class_id = fam == RP_FAMILY_DIT ? c->items[i].class_id : 0;
        mine[i].prompt = fam == RP_FAMILY_DIT ? NULL : c->items[i].prompt;
    }
    int n_all = 0, first = 0, count = 0;
    if ((st = rp_par_dp_share_items(&par, mine, n, &all, &n_all, &strings, &err)) != RP_OK) goto out;
    if ((st = rp_par_dp_select(&par, all, n_all, local, &first, &count, &err)) != RP_OK) goto out;
    for (int i = 0; i < count; i++) local[i].embed_row = first + i; /* the case's item i: row i */

    /* ---- generate this rank's part ---- */
    ctx.par = &par;
    ctx.trace = &trace; /* every rank: the trace points are collective; rank 0's is saved */
    rp_ctx_trace_notes(&ctx, &trace);
    const char *dev_name = dev ? dev->name : "cpu";
    rp_trace_note(&trace, "device", dev_name);
    if (host_check) rp_trace_note(&trace, "device.check", "host-check");
    if (rp_device_name_is_cuda(c->device)) {
        rp_trace_note(&trace, "device.precision", c->precision);
        rp_trace_note(&trace, "device.gpu_mode", c->gpu_mode);
    }
    {
        char v[256];
        rp_trace_note(&trace, "parallel.layout", layout_str(c, v, sizeof v));
        rp_trace_note(&trace, "parallel.exactness", rp_par_exactness_name(rp_par_layout_exactness(&deg)));
        rp_trace_note(&trace, "parallel.backend", c->backend);
        if (fault != RP_INJECT_NONE) rp_trace_note(&trace, "parallel.inject", c->inject);
        if (c->pipefusion > 1 || c->patch > 1) {
            snprintf(v, sizeof v, "%d", c->warmup_steps);
            rp_trace_note(&trace, "parallel.warmup_steps", v);
        }
        if (c->pipefusion > 1) /* each stage runs its own blocks: no rank reaches every trace point */
            rp_trace_note(&trace, "parallel.trace", "off: pipefusion stages run different blocks");
    }
    rp_gen_request req;
    memset(&req, 0, sizeof req);
    req.model = c->model;
    req.depth = c->depth;
    req.single_depth = c->single_depth;
    req.weights = c->weights[0] ? c->weights : NULL;
    req.weight_seed = c->weight_seed;
    req.vae = c->vae[0] ? c->vae : NULL;
    req.prompt_embeds = c->prompt_embeds[0] ? c->prompt_embeds : NULL;
    req.sampler = sk;
    req.eta = c->eta;
    req.steps = c->steps;
    req.cfg = c->cfg;
    req.guidance = c->guidance;
    req.width = c->width;
    req.height = c->height;
    req.per_item = !strcmp(c->batch_forward, "per-item");
    req.n_items = count;
    req.items = local;
    req.decode = par.replica.rank == 0; /* each dp group's leader decodes its items */
    req.perturb_noise = o->perturb_noise;
    if (o->teacher_ref) {
        /* the strategies with state across steps (pipefusion, patch) and the timestep fault
         * key it by the evaluation index, so there every step runs */
        const int every = c->pipefusion > 1 || c->patch > 1 || fault == RP_INJECT_TIMESTEP_SKEW;
        if (!(tmask = malloc((size_t)c->steps))) {
            st = RP_FAIL(&err, RP_ERR_NOMEM, "out of memory");
            goto out;
        }
        trace.record_evals = rp_cls_teacher_mask(c->steps, every ? 0 : o->teacher_steps,
                                                 fam == RP_FAMILY_DIT && sk == RP_SAMPLER_DPMPP_2M, tmask);
        if ((st = teacher_load(o->teacher_ref, c->steps, n_all, first, count, &teacher, &err)) != RP_OK) goto out;
        req.teacher = teacher;
        req.teacher_steps = tmask;
        req.decode = 0;
    }
    if (o->leak_check) {
        req.decode = 0; /* the check compares latents */
        if ((st = leak_prelude(&req, &ctx, &err)) != RP_OK) goto out;
    }
    st = rp_generate(&req, &ctx, &res, &err);
#ifdef REPRO_HAVE_CUDA
    rp_device_cuda_trace_notes(dev, &trace); /* GEMM algorithms and attention kernel (cuda only) */
#endif
    if (st != RP_OK) goto out;
    t[2] = res.encode_seconds;
    t[3] = res.sample_seconds;
    t[4] = res.decode_seconds;

    /* ---- results to rank 0, in input order ---- */
    double t5 = now_s();
    if ((st = rp_par_dp_gather(&par, &res, n_all, &gathered, &err)) != RP_OK) goto out;
    t[5] = now_s() - t5;
    if (par.rank == 0 && o->teacher_ref)
        st = write_teacher(o->out_dir, c, &gathered, tmask, o->teacher_ref, &trace, &par, dev_name, t, t_start, &err);
    else if (par.rank == 0)
        st = write_outputs(o->out_dir, c, &gathered, &trace, &par, dev_name, t, t_start, &err);

out:
    if (st != RP_OK) rc = fail(re, &err, rp_worker_exit_code(st));
    rp_gen_result_free(&gathered);
    rp_gen_result_free(&res);
    rp_trace_free(&trace);
    free(teacher);
    free(tmask);
    free(mine);
    free(local);
    free(all);
    free(strings);
    rp_par_free(&par);
    rp_comm_destroy(comm);
    rp_device_destroy(dev); /* after everything that may hold device memory */
    free(c);
    return rc;
}
