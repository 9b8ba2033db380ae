/* ctx.h — the engine options every numeric call sees.
 *
 * Everything that can change the order or precision of floating-point work is
 * here, explicit, so the harness can sweep it and the trace can record it.
 * A ctx is owned by the caller and read-only to the engine (the trace it
 * points to is the one mutable part). */
#ifndef REPRO_CTX_H
#define REPRO_CTX_H

#include <stddef.h>

#include "error.h"

typedef enum rp_precision {
    RP_PREC_FP32 = 0, /* fp32 inputs, fp32 accumulation (cblas_sgemm) */
    RP_PREC_BF16      /* GEMM inputs rounded to bf16, fp32 accumulation. Debian's OpenBLAS
                         0.3.21 does not export cblas_sbgemm, so the rounded inputs go
                         through cblas_sgemm: a bf16 x bf16 product is exact in fp32, so
                         only the fp32 accumulation rounds, as in sbgemm. */
} rp_precision;

/* How layout-dependent the arithmetic may be.
 *   DEFAULT    the libraries' fastest order: OpenBLAS picks its kernel path from the
 *              shape (so a row's bits depend on how many rows share its GEMM), and the
 *              attention variant of ctx->attn.
 *   INVARIANT  every value depends only on the inputs of its own row, never on the batch
 *              size, the batch composition, the rank count or where a shard starts:
 *              GEMMs run our own kernel (engine/gemm_invariant.c: each output element one
 *              fmaf chain over k = 0 .. K-1, whatever M, N, the row's position or the thread
 *              count), attention the canonical key-block algorithm
 *              (engine/attention/canonical.c), whose per-block partials merge in one fixed
 *              order whether the keys are local or arrive round a ring. So dp, cfg,
 *              ulysses, ring and USP give the serial run's bits. */
typedef enum rp_numerics { RP_NUMERICS_DEFAULT = 0, RP_NUMERICS_INVARIANT } rp_numerics;

typedef enum rp_attn_kind {
    RP_ATTN_MATH = 0, /* full score matrix, softmax, PV */
    RP_ATTN_SPLIT,    /* query slices */
    RP_ATTN_SUBQUAD,  /* K/V chunks with running max / log-sum-exp */
    RP_ATTN_FLASH,    /* tiled online softmax (FlashAttention-2) */
    RP_ATTN_AUTO      /* chosen from a device profile */
} rp_attn_kind;

/* Chunk sizes of the attention variants. 0 = the variant's default (see
 * engine/attention/attention.h); < 0 is an error at the first attention call.
 * With kind AUTO a nonzero value overrides the size auto would pick. */
typedef struct rp_attn_cfg {
    rp_attn_kind kind;
    int q_chunk;   /* split/subquad/flash: query rows per slice/chunk/tile */
    int kv_chunk;  /* subquad/flash: key rows per chunk/tile */
} rp_attn_cfg;

/* SIMD tier of a (real or emulated) machine. For the auto attention selector it
 * plays the role the CUDA compute capability plays in PyTorch's SDPA dispatch:
 * AVX-512 ~ SM >= 80 (flash kernels exist), AVX2 ~ SM >= 50 (mem-efficient
 * kernels exist), SSE2 ~ neither. */
typedef enum rp_simd_level { RP_SIMD_SSE2 = 0, RP_SIMD_AVX2, RP_SIMD_AVX512 } rp_simd_level;

/* What attention "auto" decides from, as frameworks decide from the device they
 * find. Presets emulate "different hardware" (rp_device_profile_parse); "host"
 * is this machine. Sequence lengths and head dim come from each call. */
typedef struct rp_device_profile {
    char name[64];           /* preset name, "host", or the key=val spec; "" = unset
                                (auto then reads the host at each call) */
    long long mem_free;      /* bytes of memory attention may use (free VRAM in a
                                framework on a GPU; MemAvailable for the host) */
    rp_simd_level simd;
    int sdpa;                /* 1: attention goes through a PyTorch-2-style fused SDPA
                                dispatch (flash > mem-efficient > math); 0: through
                                ComfyUI/Fooocus's own attention (split or sub-quadratic) */
    int split;               /* with sdpa 0: 1 = split attention (ComfyUI's
                                --use-split-cross-attention), 0 = sub-quadratic (default) */
    int flash_max_head_dim;  /* largest head dim flash accepts (128: PyTorch 2.0, 256: 2.1+) */
} rp_device_profile;

struct rp_trace;
struct rp_parallel;
struct rp_device;
struct rp_gemm_check;

typedef struct rp_ctx {
    rp_precision precision;
    int reduce_split;        /* 1: every GEMM sums its K reduction as two halves added
                                afterwards (the order a split-K GPU kernel uses) */
    rp_numerics numerics;    /* DEFAULT or INVARIANT (layout-invariant arithmetic, above) */
    int threads;             /* GEMM threads (OpenBLAS); 0 = library default */
    char blas_core[32];      /* OpenBLAS kernel set (OPENBLAS_CORETYPE, e.g. "Haswell",
                                "SkylakeX"); "" = the library's own pick. Only takes effect
                                at process start: see rp_ctx_ensure_coretype */
    rp_attn_cfg attn;
    rp_device_profile device; /* what attention "auto" decides from */
    struct rp_trace *trace;  /* per-layer activation statistics; NULL = off */
    struct rp_parallel *par; /* this rank's place in a parallel layout (engine/parallel/
                                parallel.h; mutable, like the trace); NULL = a single rank,
                                the models' plain path */
    struct rp_device *dev;   /* where the models' forwards run (engine/device.h; mutable:
                                its sticky error and mirrors); NULL = the CPU, plain path */
    const struct rp_gemm_check *gemm_check; /* the own check of the default GEMMs (ops.h); NULL =
                                off. Set by the parallel layer for the evaluations it checks */
    struct rp_model_cache *models; /* the denoiser kept loaded across this process's generate
                                calls (engine/pipeline/model_cache.h; mutable, owned by the
                                caller); NULL = each call loads and frees its own */
} rp_ctx;

/* A ctx with the defaults: fp32, no reduce_split, library threads and kernels,
 * math attention, device profile unset. Pure: reads nothing from the machine. */
rp_ctx rp_ctx_default(void);

/* Applies process-wide settings that the ctx implies (OpenBLAS thread count).
 * Call once before a run; OpenBLAS keeps this state globally, not per call. */
void rp_ctx_apply(const rp_ctx *ctx);

const char *rp_precision_name(rp_precision p);
const char *rp_numerics_name(rp_numerics n); /* "default" | "invariant" */
/* Parses "default" | "invariant"; anything else: RP_ERR_INVALID naming the value. */
rp_status rp_numerics_parse(const char *s, rp_numerics *out, rp_error *err);
/* The host-side precision for a case / CLI precision name: fp32 and bf16 are themselves;
 * on a GPU (gpu != 0) tf32 and fp16 are GEMM modes of the device and the host-side parts
 * (the prompt encoder) run fp32. Anything else: RP_ERR_INVALID naming the value. */
rp_status rp_precision_for_host(const char *name, int gpu, rp_precision *out, rp_error *err);
const char *rp_attn_kind_name(rp_attn_kind k);

/* Checks a configuration without running anything (the CLIs call it at parse
 * time): a known kind, chunk sizes >= 0, none for math, no kv_chunk for split. */
rp_status rp_attn_cfg_check(const rp_attn_cfg *c, rp_error *err);
const char *rp_simd_name(rp_simd_level s); /* "sse2" | "avx2" | "avx512" */

/* ---- device profiles ------------------------------------------------------ */

/* This machine: MemAvailable from /proc/meminfo (0 if unreadable), the SIMD tier
 * from CPUID, sdpa 0 and split 0 (ComfyUI enables PyTorch attention only on GPUs,
 * so on a CPU it runs its sub-quadratic attention), flash_max_head_dim 256. */
rp_device_profile rp_device_profile_host(void);

/* spec: a preset name, "host", or a comma list whose first item may be a preset
 * or "host" and whose other items are key=val overriding it:
 *   mem=SIZE (bytes, or with k/m/g/t: binary units), simd=sse2|avx2|avx512,
 *   sdpa=0|1, split=0|1, flash_hd=N
 * A list that names no base starts from the host ("mem=2g" = this machine with
 * 2 GiB free). Presets (rp_device_profile_presets lists them):
 *   cpu-avx512-24g  24 GiB, AVX-512, SDPA        (an SM80+ GPU with PyTorch 2.1+)
 *   cpu-avx2-8g      8 GiB, AVX2, SDPA           (a pre-Ampere GPU: no flash)
 *   cpu-lowmem-2g    2 GiB, AVX2, split attention (Fooocus/ComfyUI's own, low memory)
 *   cpu-sse2-4g      4 GiB, SSE2, SDPA           (no fused kernel: SDPA's math)
 * Unknown names and keys, bad values: RP_ERR_INVALID naming the item. */
rp_status rp_device_profile_parse(const char *spec, rp_device_profile *out, rp_error *err);

/* "cpu-avx512-24g, cpu-avx2-8g, cpu-lowmem-2g, cpu-sse2-4g, host" */
const char *rp_device_profile_presets(void);

/* Writes "mem=...,simd=...,sdpa=N,split=N,flash_hd=N" (parseable back). */
void rp_device_profile_describe(const rp_device_profile *p, char *buf, size_t cap);

/* ---- OpenBLAS kernel set ------------------------------------------------------ */

/* The kernel set OpenBLAS loaded (openblas_get_corename()). */
const char *rp_blas_core_loaded(void);

/* Makes this process run with OpenBLAS kernel set `core`. OpenBLAS reads
 * OPENBLAS_CORETYPE once, when the library loads, so a different core needs a
 * new process image: if the loaded core differs (case-insensitively), this sets
 * OPENBLAS_CORETYPE=core and re-executes /proc/self/exe with argv (NULL: this
 * process's own command line, from /proc/self/cmdline); on success it does not
 * return. A re-executed process that still got another core (the library or
 * the CPU lacks it, e.g. 0.3.21 maps SapphireRapids to Cooperlake) gets
 * RP_ERR_UNSUPPORTED naming both, never a silent substitute or an exec loop.
 * core NULL or "" (the library's pick): RP_OK without doing anything. A name
 * other than [A-Za-z0-9_]{1,31}: RP_ERR_INVALID. Call before any work whose
 * output the re-exec would repeat. */
rp_status rp_ctx_ensure_coretype(const char *core, char *const *argv, rp_error *err);

/* ---- the CLIs' engine options ------------------------------------------------------ */

/* Sets the options the commands share from their strings (NULL = not given):
 * --attention-q-chunk / --attention-kv-chunk (integers 1..2^24), --openblas-coretype
 * (stored in ctx->blas_core; the caller then calls rp_ctx_ensure_coretype) and
 * --device-profile (rp_device_profile_parse; not given: "host", read once here,
 * when the attention is auto, else left unset: nothing reads it).
 * Call after ctx->attn.kind is set: the chunk sizes are checked against it
 * (rp_attn_cfg_check). Errors name the option. */
rp_status rp_ctx_configure(rp_ctx *ctx, const char *q_chunk, const char *kv_chunk, const char *coretype,
                           const char *device_profile, rp_error *err);

/* ---- trace ------------------------------------------------------------------- */

/* Notes every reduction-order knob in t (no-op when t is NULL): precision,
 * reduce_split, threads (requested) and openblas.threads (in effect),
 * openblas.coretype (requested) and openblas.core (loaded), attention,
 * attention.q_chunk, attention.kv_chunk, device_profile ("none" when unset) and
 * device_profile.spec.
 * A key whose latest note already has the value is not noted again. */
void rp_ctx_trace_notes(const rp_ctx *ctx, struct rp_trace *t);

/* rp_trace_note unless the latest note of key already has this value: attention
 * calls note their auto choice once per run, not once per layer. */
void rp_trace_note_once(struct rp_trace *t, const char *key, const char *value);

#endif
