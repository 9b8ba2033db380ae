/* parallel.h — xDiT's parallel strategies over the communication backends.
 *
 * One rank of a parallel layout carries a `struct rp_parallel` (pointed to by
 * rp_ctx.par; NULL = single rank). The models and denoisers ask it what to do;
 * they take no new parameters, and with par == NULL they run their plain
 * single-rank code, bit for bit.
 *
 * ---- rank layout ---------------------------------------------------------------
 * xDiT's order, innermost to outermost: tensor (always 1 here), sequence
 * (ulysses innermost, then ring; patch parallel takes the sequence slot when it is
 * used), pipefusion, cfg, dp:
 *   rank = ((((dp_i * cfg + cfg_i) * pipefusion + pf_i) * patch + patch_i) * ring + ring_i)
 *          * ulysses + uly_i
 *   sp_i = (patch_i * ring + ring_i) * ulysses + uly_i    (patch excludes ulysses and ring)
 * Sub-communicators (rp_comm split of the world, MPI semantics), made in this order
 * (splits are collective: every rank makes the same ones in the same order): one per
 * degree, the ranks that differ in its coordinate only, ordered by it, in rp_par_degrees'
 * member order, with the sequence group sp (the strategies whose row splits the sequence:
 * ulysses x ring, or patch) made just before the first of them:
 *   dp, cfg, pipefusion, sp, ulysses, ring;
 * (patch's group, its row's on_sequence_group, is the sequence group itself: patch excludes
 * ulysses and ring);
 * then `replica`: the ranks with the same dp index, i.e. the ones that together
 * compute one dp group's items. A group of one rank has comm == NULL (no split
 * is made for a degree of 1; every collective on it is the identity).
 *
 * ---- strategies (the exact ones are here; pipefusion and patch build on this) ----
 * dp       items (prompt, seed) in contiguous blocks over the dp groups: the list is
 *          broadcast from rank 0 and every rank verifies an FNV-1a checksum of what it
 *          received and compares it with its own copy (dp.c); each group generates
 *          its items under their GLOBAL indices (so their noise is the single-rank
 *          noise); results are gathered to rank 0 in input order.
 * cfg      (cfg = 2, guided runs only) cfg rank c evaluates segment c of the
 *          single-rank batch layout — DiT [cond; uncond], SD3 [uncond; cond] — and the
 *          two outputs are allgathered after each evaluation, so both ranks combine
 *          the same bits with the same formula and continue identically (cfg_par.c).
 * ulysses  tokens sharded over the sp group; before attention an all-to-all turns
 *          (B, H, T/u, D) shards into (B, H/u, T, D) head groups, after it the inverse.
 * ring     K/V blocks passed around the ring with sendrecv; each block gives a
 *          partial (row max m_j, sum l_j = sum exp(s - m_j), O_j = exp(s - m_j) v),
 *          merged online: m = max(m, m_j), l = e^(m_old-m) l + e^(m_j-m) l_j, same for O;
 *          out = O / l (sp_attention.c). That is log-sum-exp merging in (max, sum) form:
 *          lse = m + log l, and only exp is needed (rp_expf: the same bits everywhere).
 *          Each block is one GEMM tile whatever ctx->attn says (the ring IS the tiling;
 *          the variant knob applies to the single-rank and Ulysses attention calls).
 * usp      ulysses inside, ring outside (ulysses within a ring slot, then the ring over
 *          the head groups).
 * Sequence sharding: embeddings are computed for the whole sequence (cheap), then
 * each sp rank keeps its contiguous slice [sp_i T/sp, (sp_i + 1) T/sp); blocks run
 * on the slice; positions stay global; before the final unpatchify the tokens are
 * allgathered. FLUX shards its text and image tokens separately (each divisible by
 * sp) and keeps [text_local, image_local]; SD3 shards image tokens and keeps its
 * text stream whole on every sp rank (SD3-medium's 333 text tokens divide by no
 * degree, and validation requires only the image tokens to divide): the text is a
 * "replicated" segment of the joint attention
 * (its K/V joins every rank's keys once; its queries are computed on every rank,
 * merged in a fixed block order so the copies stay identical). DiT shards its tokens.
 *
 * ---- exactness contract (rp_par_strategy; the classifier reads it) ----------------
 * dp, cfg, ulysses, ring, usp: EXACT — equal to a single rank up to floating-point
 *   reordering: a GEMM's row count changes (the BLAS may pick other kernels by M:
 *   OpenBLAS does, see engine/pipeline/pipeline.h), attention sums over keys in another order
 *   (ring; Ulysses keeps each head's attention call identical, keys in the single
 *   rank's order, except that "auto" may choose another variant for H/u heads) —
 *   never different math.
 * pipefusion, patch: WARMUP_EXACT — exact during warmup, approximate after it (stale
 *   activations by design).
 *
 * ---- trace -------------------------------------------------------------------------
 * For a recorded evaluation (ctx->trace set and trace->eval < record_evals on every
 * rank: every rank keeps a trace with the same counters; only rank 0's is saved) each
 * trace point sends its rows and tokens to world rank 0, which assembles the tensor in
 * the single-rank layout (rows from the denoiser's row map, tokens from the model's
 * token map) and records that, so the classifier compares layer by layer against a
 * single-rank run. Cells no rank sent stay 0 and note "parallel.trace.incomplete"
 * (a fault like dp-rank-layout sends the same rows twice and others never).
 *
 * ---- fault injection (engine/parallel/inject.h; off by default) --------------------
 * dp-rank-layout      dp.c: the group's items are chosen with dp index rank / dp (xDiT's
 *                     SD3 bug; taken modulo dp so a group still gets a block) instead of
 *                     the layout's; the gather then concatenates the
 *                     groups' results in group order, so items come back duplicated and
 *                     out of order. It changes nothing when world / dp == dp (e.g. dp 2 x
 *                     cfg 2): the wrong formula then happens to be right.
 * dp-shared-noise     dp.c: every group keys its items' noise by the local index 0, 1, ..
 *                     instead of the global one.
 * ulysses-head-order  sp_attention.c: the inverse all-to-all puts head group p in slot
 *                     u - 1 - p.
 * ring-no-rescale     sp_attention.c: partials added as O += O_j, l += l_j (no max correction).
 * rope-offset         FLUX: ranks > 0 give image token g the RoPE position of token g + 1
 *                     (mod N) (rp_par_pos_shift).
 * attn-scale          the last rank (world - 1) uses scale 1/sqrt(D + 1) in every attention.
 * timestep-skew       ranks > 0 feed the model the previous evaluation's timestep at
 *                     evaluation 1 (rp_par_timestep).
 * norm-eps-rank       the last rank's MLP LayerNorm (norm2; SD3 and FLUX: the image stream's,
 *                     FLUX: in the double blocks) gets eps x 10 (rp_par_norm_eps): torch's
 *                     default 1e-5 for the models' 1e-6, a norm built without its eps.
 * bf16-layer-rank     the last rank's first block runs its (image stream's) MLP GEMMs with
 *                     precision bf16 (rp_par_mlp_ctx).
 * act-bf16-rank       in a bf16 case (default numerics, CPU) the last rank's first block's MLP
 *                     activation reads its input rounded to bf16 (rp_par_mlp_act_input).
 * cfg-combine-order   cfg_par.c: cfg rank 1 keeps the allgathered halves as [mine; other]
 *                     (segment order swapped), so its guidance combine swaps cond and uncond.
 * dp-image-order      dp.c: the last dp group's leader sends its images last-first.
 * vae-decode-rank     the last dp group's leader converts its decoded images to 8 bits by
 *                     truncation instead of rounding (rp_par_rgb8_truncates). The decoder's
 *                     own constants make poor faults here: its GroupNorms normalise a wrong
 *                     latent scaling factor away, and their activations' variance dwarfs an
 *                     eps of 1e-5 (measured: 0 to 3 of 49152 values change).
 * temb-period-rank    the last rank's sinusoidal embeddings use max_period + 1
 *                     (rp_par_max_period).
 * dp-latents-order    dp.c: the last dp group's leader sends its final latents last-first
 *                     (its trajectory and images in order).
 * noise-bf16-rank     the last dp group rounds its initial noise to bf16 after drawing it
 *                     (rp_par_noise_fault).
 * weight-leak-rank    the last dp group's timestep MLP adds 2^-20 to its output bias's first
 *                     value after each forward (rp_par_weight_leak; models/embed.c): some 30
 *                     fp32 ulps of a timestep embedding of order 1, 1/30 of a bf16 one, and
 *                     one value, so a bf16 GEMM's input rounding almost surely absorbs it.
 *
 * ---- hooks for the strategies that own blocks (pipefusion, patch) -----------------
 * rp_par_hooks: which blocks [a, b) a rank runs, the residual stream(s) at the entry
 * of block a and the exit of block b - 1, and the K/V of each attention (to replace
 * by a per-rank cache). All NULL: every block, no stream exchange, fresh K/V.
 *
 * ---- the approximate strategies (pipefusion.c, patch.c) ---------------------------
 * Both keep state across the forwards of one generation (stale activations), so the
 * denoisers run every model forward through rp_par_forward (which knows the evaluation
 * = the sampling step) and rp_generate calls rp_par_generate_begin first (the reset).
 * pipefusion  (xDiT PipeFusion) stage s = the pipefusion coordinate owns blocks [a_s, b_s)
 *          (pipefusion_layers, or an even split with the remainder on the first stages).
 *          Warmup steps (eval < warmup_steps): the whole image goes 0 -> 1 -> .. -> P-1
 *          (the residual stream(s) sent stage to stage), every attention with fresh K/V
 *          (exact up to reordering), and each stage stores its layers' image K/V. Later
 *          steps (xDiT's _async_pipeline): the image tokens are cut into M =
 *          num_pipeline_patch patches along the height (contiguous token rows); patch
 *          m = 0 .. M-1 flows through the stages in turn, and each attention writes patch
 *          m's fresh K/V into the stage's cache and attends to the whole cache: patches
 *          before m hold this step's K/V, patches after m the previous step's (stale) —
 *          xDiT's in-place update_and_get_kv_cache. Text tokens (SD3, FLUX) go with every
 *          patch and are always fresh. A patch whose K/V was never computed in this
 *          generation (warmup 0, step 0) is left out of the keys. With ulysses / ring the
 *          sp group of a stage shards each patch as it would the sequence (xDiT's hybrid).
 *          The last stage's output is broadcast over the pipefusion group for the
 *          sampler. The K/V cache is reset by rp_par_generate_begin (pipefusion-cache-leak:
 *          not). The stages run different blocks, so the collective per-layer trace is off
 *          (no records).
 * patch    (DistriFusion, displaced patch parallelism) each rank of the patch group (the
 *          sequence slot) owns a horizontal patch of the image tokens (the sequence
 *          shard); text tokens are whole on every rank. Every attention allgathers the
 *          fresh image K/V of all patches over the group; in warmup steps all of them are
 *          used (exact up to reordering); later, the rank's own patch is fresh and the
 *          others come from the previous step's exchange (stale; the real system overlaps
 *          that exchange with the next step's compute, here it is synchronous but its
 *          result is only used a step later). The outputs are allgathered as for sequence
 *          parallelism. Its stale K/V is reset by rp_par_generate_begin.
 * Both: slot = the forward's index within an evaluation (per-item batches run several),
 * so every forward of a step has its own cache.
 *
 * Errors inside a forward's trace points are sticky in the context (rp_par_forward_end);
 * every other function returns its status. A context is used by one thread. */
#ifndef REPRO_PARALLEL_H
#define REPRO_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

#include "backends/comm.h"
#include "../ctx.h"
#include "../error.h"
#include "../gen.h"
#include "../ops.h"
#include "inject.h"
#include "strategy.h"

/* ---- hooks ----------------------------------------------------------------------- */

enum { RP_PAR_STREAM_ENTER = 0, RP_PAR_STREAM_LEAVE = 1 };

typedef struct rp_par_hooks {
    void *user;
    /* Blocks [*a, *b) of n this rank runs (FLUX numbers double then single blocks
     * 0 .. n_double + n_single - 1). NULL: [0, n). */
    void (*block_range)(void *user, int n_blocks, int *a, int *b);
    /* Called with the residual stream(s) before block a (ENTER: may overwrite them
     * with what the previous stage computed) and after block b - 1 (LEAVE: may pass
     * them on). x (rows_x, W) is the image stream (FLUX: the joint stream), c
     * (rows_c, W) SD3's text stream or NULL. When b < n the model skips its final
     * layer and leaves its output untouched. NULL: no call. */
    rp_status (*stream)(void *user, int where, int block, float *x, size_t rows_x, float *c, size_t rows_c,
                        int W, rp_error *err);
    /* Before attention `layer`: may replace this rank's k, v (B, H, Tk, D) by its own
     * (*k_out, *v_out with *Tk_out keys, e.g. fresh keys + a stale K/V cache); leaving
     * *k_out NULL keeps them. The first kv_lead and the last kv_rep of the Tk tokens are
     * text (rp_parallel.kv_lead / kv_rep, set for the call). k, v are this rank's tokens
     * (patch parallelism: its patch); with ulysses, the head group's whole sequence after
     * the all-to-all; with ring, the keys this rank passes around the ring (a ring
     * rank's replaced keys must all have the same count). NULL: no call. */
    rp_status (*kv)(void *user, int layer, const float *k, const float *v, int B, int H, int Tk, int D,
                    const float **k_out, const float **v_out, int *Tk_out, rp_error *err);
} rp_par_hooks;

/* ---- the context ------------------------------------------------------------------ */

/* A group of ranks. `rank` is who this process is in it (its coordinates' index: what a
 * rank-keyed branch reads, and a fault); `pos` is which part of the group's data it computes
 * (its shard, head group, cfg segment, item block, ring place, stage) and its number in
 * `comm`, so every exchange places data by pos. The two are equal unless the layout is
 * rotated (rp_par_rotate). */
typedef struct rp_par_group {
    rp_comm *comm;  /* owned; NULL when size == 1 */
    int rank, size;
    int pos;
} rp_par_group;

#define RP_PAR_REPLICA_NAME 88 /* a replica log entry's name, with its NUL */

typedef struct rp_par_pf rp_par_pf; /* pipefusion.c */
typedef struct rp_par_rlog rp_par_rlog; /* replica.c */
typedef struct rp_par_pp rp_par_pp; /* patch.c */

typedef struct rp_parallel {
    rp_par_degrees deg;
    int rank, world;
    rp_par_coords at;
    rp_comm *world_comm;      /* not owned */
    /* One group per degree, at its member's index (group[i]: rp_par_member_strategy(i)'s),
     * also by name (p->cfg); then the composite groups (rp_par_span). */
    union {
        rp_par_group group[RP_PAR_N_DEGREES];
        struct { RP_PAR_MEMBERS(rp_par_group) }; /* group's members */
    };
    rp_par_group sp;          /* the strategies that split the sequence: ulysses x ring, or patch */
    rp_par_group replica;     /* all but dp: the ranks that compute one dp group's items */
    /* The other numbering of the same groups (rp_par_rotate swaps it in): made at the first
     * rotation; alt_made says so. rotated: the groups above are the rotated ones. */
    rp_par_group alt_group[RP_PAR_N_DEGREES], alt_sp, alt_replica;
    int alt_made, rotated;
    rp_inject_id fault;       /* RP_INJECT_NONE in normal runs */
    float *fault_kept;        /* (fault_kept_n) what a fault keeps from one call to the next
                                 (cfg-stale-half: the previous segment 1); owned */
    size_t fault_kept_n;
    rp_par_hooks hooks;
    /* the approximate strategies' state (owned; NULL unless initialised) */
    rp_par_pf *pf;            /* pipefusion.c */
    rp_par_pp *pp;            /* patch.c */
    /* the forward in progress (rp_par_forward), read by their hooks */
    int fwd_eval;             /* the evaluation (= sampling step); -1 before the first */
    int fwd_slot;             /* the forward's index within the evaluation */
    int kv_lead, kv_rep;      /* the attention in progress: text tokens first / last (hook) */
    /* set while a device forward's parallel step runs host-staged (sp_attention.c):
     * the device the staged attention computes on; NULL otherwise */
    struct rp_device *stage_dev;
    /* items: set by rp_par_dp_select */
    int n_items_total;        /* items of the whole run */
    int item_first;           /* position of this rank's first item in the run's list (the
                                 position the group believes it has, under dp-rank-layout) */
    /* trace rows: set by the denoiser before each forward (rp_par_set_trace_rows) */
    const int *trace_rows;    /* (n_trace_rows) single-rank trace row of each model row, or -1 */
    int n_trace_rows, trace_total_rows;
    int trace_incomplete;     /* rank 0: some assembled trace tensor had cells no rank sent */
    int stale_from;           /* the first evaluation that may use stale activations (patch,
                                 pipefusion: warmup_steps; INT_MAX for the exact layouts) */
    rp_par_rlog *rlog;        /* fingerprints of this rank's replicated tensors (replica.c; owned) */
    /* the own check (RP_PAR_RG_OWN), set by the caller for the runs that make it (the
     * classifier's teacher runs): the default ring attention, the default attention
     * variants and (first evaluation) the default GEMMs recompute their output; the pairs'
     * folded fingerprints wait in own_hash for a name (rp_par_own_hold), own_what says
     * which computation differed */
    int check_own;
    /* 1: after warmup the approximate strategies (patch, PipeFusion) place this evaluation's
     * fresh K/V for every patch while running their later steps' code (patch: the warmup's
     * exchange; PipeFusion: a synchronous pass fills the cache before the patch passes), so
     * such a step computes the exact result: the invariant shadow's check of that code
     * (docs/classification.md §4, §12). Set by the caller for a run, like check_own. */
    int fresh_kv;
    int own_at[3];            /* the evaluations whose own checks run whole (rp_par_own_now): the
                                 run's first, last and one drawn between, set with check_own
                                 (0, 0, 0: the first only) */
    int own_call;             /* default attention calls so far in this forward (rp_par_own_slice) */
    int own_calls_last;       /* how many the previous forward made (0: none yet) */
    int own_gemm_call;        /* the same for the default GEMMs (rp_par_forward's rotation) */
    int own_gemm_calls_last;
    int own_held;
    uint64_t own_hash[2];
    char own_what[32];
    rp_gemm_check own_gemm;   /* the default GEMMs' pairs into the own check (rp_par_forward) */
    /* the staleness contract (stale_check.c): the forward's folded pair, and the first
     * check that failed in it */
    int generation;           /* rp_par_generate_begin's count: stale rows of an earlier one */
    int stale_seen;           /* the forward in progress has attended to stale K/V */
    int stale_held;
    uint64_t stale_hash[2];
    char stale_what[RP_PAR_REPLICA_NAME]; /* the first failed check's tensor ("kv.attn3.patch0") */
    char stale_due[RP_PAR_REPLICA_NAME];  /* and what the contract said ("read at step 4: due step 3's rows") */
    /* The forward's trace parts, held until its end (rp_par_forward_end) so that its
     * trace points cost no synchronisation: a rank != 0 buffers what it sends (tr_out);
     * rank 0, each record's own cells and where the others' go (tr_pend, trace.c order). */
    unsigned char *tr_out;
    size_t tr_out_len, tr_out_cap;
    struct rp_par_tpend *tr_pend;
    int n_tr_pend, cap_tr_pend;
    /* rp_par_trace_hold: the records stay open across the forwards until
     * rp_par_trace_release; tr_point counts the forward's trace points (rank 0), tr_fwds
     * the forwards flushed into the held records */
    int tr_hold, tr_point, tr_fwds;
    /* sticky error of the trace points */
    rp_status st;
    rp_error err;
} rp_parallel;

/* Splits world into the groups of layout d and fills *p (which owns the groups).
 * Collective over world. Errors: RP_ERR_INVALID when world->world != rp_par_world(d)
 * or a degree < 1; the comm layer's statuses otherwise. */
rp_status rp_par_init(rp_parallel *p, rp_comm *world, const rp_par_degrees *d, rp_inject_id fault, rp_error *err);
/* The rotated layout (docs/classification.md §6, "the shards rotated"): every group's data
 * handed on by one, so each rank computes what the next rank of each of its groups computes
 * in the plain layout (its data coordinate is (coordinate + 1) mod degree in every degree, so
 * pos = (rank + 1) mod size in each degree's own group; a composite group's pos is the index
 * of those rotated coordinates), while who it is (rank, p->rank, p->at) stays. A correct layout's result does not depend on which process
 * computes which part: the same shapes, the same code, the same exchanges, so a rotated run
 * is bitwise the plain one, and a difference is arithmetic keyed to a rank's identity.
 * rp_par_rotates: whether the layout has such a rotation here (world > 1, no PipeFusion, whose
 * stages keep their blocks and caches from rp_par_pipefusion_init; patch parallelism places its
 * bands by pos, so it rotates with the sequence group). rp_par_rotate(p, 1)
 * switches to it (collective over the world: the first call splits the rotated groups),
 * rp_par_rotate(p, 0) back; the caller selects its items again (rp_par_dp_select).
 * Errors: RP_ERR_INVALID for a layout that does not rotate; the comm layer's. */
int rp_par_rotates(const rp_par_degrees *d);
rp_status rp_par_rotate(rp_parallel *p, int on, rp_error *err);
/* The world rank that computes the data of position `data` (coordinates) in the current
 * numbering: rp_par_rank_of(data) unless rotated. */
int rp_par_data_rank(const rp_parallel *p, const rp_par_coords *data);

/* Destroys the groups (not the world comm). NULL and zeroed contexts are allowed. */
void rp_par_free(rp_parallel *p);

/* A model forward's status at its end: st when it failed, else the device's first error
 * (rp_d_check, which is read and cleared in either case), else the trace points' sticky
 * error. Collective over the world when the forward's evaluation is recorded: the ranks'
 * buffered trace parts go to rank 0 in one message each and rank 0 completes the
 * forward's records (rp_par_trace). Every rank calls it after every forward, failed or
 * not. */
rp_status rp_par_forward_end(const rp_ctx *ctx, rp_status st, rp_error *err);

/* Is this rank the one whose fault-injection applies? Helpers of the faults. */
int rp_par_fault(const rp_ctx *ctx, rp_inject_id id);

/* ---- sequence parallelism (for the models) --------------------------------------- */

/* sp group size (1 without par). */
int rp_par_sp(const rp_ctx *ctx);
/* This rank's contiguous token slice [*t0, *t0 + *n) of a sequence of T tokens sharded
 * over the sp group; [0, T) without sequence parallelism. T % sp != 0: RP_ERR_INVALID.
 * Under pipefusion the T (image) tokens are first cut into the pipeline patches and the
 * slice is of the patch in progress (the whole sequence in warmup steps). */
rp_status rp_par_shard(const rp_ctx *ctx, int T, int *t0, int *n, rp_error *err);
/* local (B, n, W), this rank's shard, tokens [t0, t0 + n) as rp_par_shard gave them -> full
 * (B, T, W) in token order (allgather over the sp group). full may be local itself (the
 * gather goes through scratch). Under a pipeline patch: local is the patch's shard; full
 * gets every patch computed so far. Before any data moves, the ranks' (t0, n) must tile the
 * sequence (the patch in progress) in the group's order, in equal shards: else RP_ERR_INVALID
 * naming the tokens no rank, or two ranks, computed (the coverage contract). */
rp_status rp_par_gather_tokens(const rp_ctx *ctx, float *full, const float *local, int B, int T, int W, int t0,
                               int n, rp_error *err);
/* rope-offset: 1 on ranks > 0 when injected, else 0. */
int rp_par_pos_shift(const rp_ctx *ctx);

/* Self-attention over this rank's tokens: q, k, v, out (B, H, T, D), softmax(scale q k^T) v
 * as rp_attention. The first T - Trep tokens are this rank's shard of the sequence, the
 * last Trep are replicated on every sp rank (SD3's text; 0 otherwise). The shard may be
 * two separately sharded segments, the first Tlead tokens and the rest (FLUX's text and
 * image; Tlead 0 otherwise): the global order is all ranks' first segments, then all
 * ranks' second ones (so Ulysses gives math attention the single rank's key order). Without sequence
 * parallelism it is rp_attention over the T tokens (after the K/V hook, if any), bit for
 * bit. layer: the attention's index in the model (for the hooks). key_mask (B, T) or
 * NULL; with sp > 1 masks are refused (RP_ERR_UNSUPPORTED: no pipeline passes one).
 * Errors: RP_ERR_INVALID when H is not divisible by ulysses, the comm layer's. */
rp_status rp_par_attention(const rp_ctx *ctx, int layer, float *out, const float *q, const float *k,
                           const float *v, const uint8_t *key_mask, int B, int H, int T, int Tlead, int Trep,
                           int D, float scale, rp_error *err);

/* Blocks [*a, *b) of n_blocks this rank runs (the hook's, or all). */
void rp_par_block_range(const rp_ctx *ctx, int n_blocks, int *a, int *b);
/* The stream hook (RP_OK without one). */
rp_status rp_par_stream(const rp_ctx *ctx, int where, int block, float *x, size_t rows_x, float *c,
                        size_t rows_c, int W, rp_error *err);

/* The text tokens [*l0, *l0 + *n) of L this rank keeps: sharded like the image under
 * ulysses / ring (FLUX), whole on every rank under patch parallelism and for the pipeline
 * patches (text goes with every patch). */
rp_status rp_par_shard_text(const rp_ctx *ctx, int L, int *l0, int *n, rp_error *err);

/* ---- the approximate strategies (pipefusion.c, patch.c) ------------------------------- */

/* Pipefusion on p (pipefusion degree >= 1; 1: the serial emulation, one stage running every
 * block over the patches): num_patches pipeline patches (M >= the degree),
 * layers (n_layers == degree: blocks per stage; 0: even split), warmup steps. Installs the
 * hooks. RP_ERR_INVALID for counts that do not fit or with patch parallelism. With ulysses
 * / ring each stage's sp group shards every pipeline patch (pipefusion.c). */
rp_status rp_par_pipefusion_init(rp_parallel *p, int num_patches, const int *layers, int n_layers,
                                 int warmup_steps, rp_error *err);
/* Patch parallelism on p (patch degree > 1) with warmup steps. Installs the K/V hook. */
rp_status rp_par_patch_init(rp_parallel *p, int warmup_steps, rp_error *err);
/* Frees their state (rp_par_free calls these). */
void rp_par_pipefusion_free(rp_parallel *p);
void rp_par_patch_free(rp_parallel *p);

/* Start of a generation: the first evaluation comes next, and the stale activations of
 * the previous generation are dropped (pipefusion's K/V cache: not under
 * pipefusion-cache-leak). p may be NULL. */
void rp_par_generate_begin(rp_parallel *p);

/* One model forward of the evaluation `eval` (the denoiser's count: the sampling step, one
 * evaluation per step; under teacher forcing with skipped steps, the steps run so far):
 * fn(user, ctx', out) computes the model output (n_out floats) into out. Without pipefusion: fn once with ctx (patch parallelism
 * notes eval and slot for its hook). Pipefusion: fn once per pipeline patch (once in
 * warmup) with ctx's trace removed, then out is broadcast from the last stage over the
 * pipefusion group, so every stage holds the output. Without ctx->par: fn once. */
typedef rp_status (*rp_par_forward_fn)(void *user, const rp_ctx *ctx, float *out, rp_error *err);
rp_status rp_par_forward(const rp_ctx *ctx, int eval, rp_par_forward_fn fn, void *user, float *out, size_t n_out,
                         rp_error *err);

/* For parallel.c: the strategies' parts of rp_par_generate_begin and rp_par_forward
 * (the reset of the stale activations; pipefusion's forward over its patches and stages),
 * of rp_par_shard and of rp_par_gather_tokens. */
void rp_par_pf_reset(rp_parallel *p);
void rp_par_pp_reset(rp_parallel *p);
rp_status rp_par_pf_forward(const rp_ctx *ctx, rp_par_forward_fn fn, void *user, float *out, size_t n_out,
                            rp_error *err);
/* The pipeline patches PipeFusion runs (M), 0 without PipeFusion. */
int rp_par_pf_patches(const rp_parallel *p);
/* Is a pipeline patch in progress (1: patch *m of *M)? */
int rp_par_pf_patch(const rp_parallel *p, int *m, int *M);
/* patch (B, T / M, W), the patch in progress of a sequence of T -> full (B, T, W): the
 * patches computed so far in this evaluation, this one included (full may be patch). */
rp_status rp_par_pf_tokens(rp_parallel *p, float *full, const float *patch, int B, int T, int W, rp_error *err);

/* ---- trace ------------------------------------------------------------------------- */

/* Notes in t (NULL: nothing) the layout the engine holds, as it runs it, for the classifier
 * to hold against what the case asks (harness/analysis/classify.c, cls_asked): "par.degrees" =
 * rp_par_named_text of its degrees ("dp=2 cfg=1 ..."), and with an approximate strategy "par.warmup" = the evaluations it runs
 * exact (stale_from), with PipeFusion "par.pipeline_patches" = M. */
struct rp_trace;
void rp_par_trace_notes(const rp_parallel *p, struct rp_trace *t);

/* The denoiser, before a forward of n model rows: rows[r] is model row r's row in the
 * single-rank trace tensor (or -1: not traced), total the single-rank trace's row count.
 * rows stays the caller's. */
void rp_par_set_trace_rows(rp_parallel *p, const int *rows, int n, int total);

/* One evaluation in several forwards (a batch run one item per forward): between
 * rp_par_trace_hold and rp_par_trace_release every forward's trace points go into the
 * same records, one per trace point over all the forwards' rows (each forward placing its
 * rows with rp_par_set_trace_rows in one single-rank tensor of the same total), so the
 * evaluation's trace is the one a joint forward of the batch records. Every forward
 * between must reach the same trace points in the same order (a difference is a sticky
 * error). Both are called on every rank; rp_par_trace_release completes the records on
 * rank 0 (after a failure too: it frees what was held). */
void rp_par_trace_hold(rp_parallel *p);
void rp_par_trace_release(const rp_ctx *ctx);

/* A model's trace point: x (rows, n, W), rows = the forward's batch; tok (n) the global
 * token index of each of its n tokens in a sequence of T, or NULL when x holds the
 * whole sequence (then identical on every sp rank; only sp rank 0 sends it). Records
 * the assembled tensor on rank 0 (see the header comment); no-op when the current
 * evaluation is not recorded or ctx->trace is NULL. ctx->par NULL: the plain path, x
 * recorded as is. x may be device memory (ctx->dev): it is copied to the host only for
 * a recorded evaluation. With a layout the record is completed at the forward's end
 * (rp_par_forward_end), when every rank's part has come. Errors are sticky
 * (rp_par_forward_end; the device's: rp_d_check). */
void rp_par_trace(const rp_ctx *ctx, const char *name, const float *x, int rows, int n, int W, const int *tok,
                  int T);

/* ---- replica consistency (replica.c) ----------------------------------------------
 * Tensors a layout keeps replicated are computed by the same code from the same bits on
 * every rank that holds them, so every copy must be bitwise equal: a difference is a bug
 * at that tensor, whatever rank 0's copy shows. Groups of copies:
 *   SP       ranks that differ only in their sequence coordinate (ulysses, ring, patch):
 *            the whole-sequence trace points (embedders, conditioning, gathered outputs)
 *   REPLICA  ranks of one dp group: the guided prediction and the latents of every step
 *   WORLD    every rank, whatever its items: the per-row inputs that are one value per
 *            evaluation (the model's timestep, the guidance), the same on every rank by
 *            construction (a rank fed another timestep or guidance is a bug however small
 *            the difference, in any precision, on any device)
 *   OWN      one rank, two computations: a result of arithmetic no exact comparison of two
 *            runs executes (the default ring merge; the default attention variants and the
 *            default GEMM's hand-over to the BLAS, which the invariant shadow replaces) and
 *            its recomputation from the same inputs by separately written code with the same
 *            IEEE operations in the same order (p->check_own; rp_par_own_hold). The pair is
 *            compared on every rank, rank 0 included, and with world 1 too (a single rank
 *            running flash against a math reference).
 *   STALE    one rank, two fingerprints: what an approximate strategy used and what its
 *            staleness contract says it must be (stale_check.c) — the K/V rows of each
 *            other patch an attention reads (the rows computed for the same items and
 *            layer at the evaluation the contract names), and the last pipeline stage's
 *            output after the broadcast (its own). Noted in every run, one folded pair a
 *            forward. */
typedef enum rp_par_rgroup {
    RP_PAR_RG_SP = 0,
    RP_PAR_RG_REPLICA = 1,
    RP_PAR_RG_WORLD = 2,
    RP_PAR_RG_OWN = 3,
    RP_PAR_RG_STALE = 4,
    RP_PAR_RG_COUNT
} rp_par_rgroup;
#define RP_PAR_REPLICA_MAX_ENTRIES (1 << 20)

/* "sp" | "replica" | "world" | "own" | "stale" */
const char *rp_par_rgroup_name(rp_par_rgroup g);
/* Appends the fingerprint (rp_par_fingerprint of the n floats) of this rank's copy of the
 * replicated tensor `name` at the forward's evaluation to its log. No communication; a
 * no-op without a layout, with world 1 or when the group has one rank. x is host
 * memory (rp_par_trace views a device tensor on the host first). */
void rp_par_replica_note(const rp_ctx *ctx, rp_par_rgroup group, const char *name, const float *x, size_t n);
/* The same at evaluation eval: a tensor fed to that evaluation's forward, noted before it
 * (rp_par_replica_note takes the evaluation of the forward that last ran). */
void rp_par_replica_note_at(const rp_ctx *ctx, int eval, rp_par_rgroup group, const char *name, const float *x,
                            size_t n);

typedef struct rp_par_replica_report {
    long checked;              /* fingerprints compared */
    struct {
        int eval;              /* -1: every copy equal */
        int index;             /* position of the entry in the leader's log */
        rp_par_rgroup group;
        int rank_a, rank_b;    /* the group leader and the rank whose copy differs */
        char name[RP_PAR_REPLICA_NAME];
        char other[RP_PAR_REPLICA_NAME]; /* rank_b's name when it noted another tensor there */
    } first;
    char unchecked[256];       /* why some copies could not be compared ("" none) */
} rp_par_replica_report;

/* Collective over the world: every rank's log to rank 0, which compares each rank's
 * fingerprints with its group leader's in order and fills *out with the earliest
 * difference (other ranks: *out zeroed, first.eval -1). kernels: this rank's BLAS
 * kernel set and device ("Haswell/cpu"); a group whose ranks differ there is reported
 * unchecked. Errors: the comm layer's, RP_ERR_NOMEM. */
rp_status rp_par_replica_collect(rp_parallel *p, const char *kernels, rp_par_replica_report *out, rp_error *err);
/* Frees the log (rp_par_free calls it). */
void rp_par_replica_free(rp_parallel *p);
/* How many fingerprints p's log holds (0 with none). */
int rp_par_replica_logged(const rp_parallel *p);
/* A pair of fingerprints on this rank into the log (group OWN or STALE), at the forward's
 * evaluation: a under name, b under other. */
void rp_par_log_pair(rp_parallel *p, rp_par_rgroup g, const char *name, uint64_t a, const char *other, uint64_t b);

/* ---- the staleness contract of the approximate strategies (stale_check.c) ----------- */

/* The identity of the forward in progress for the contract: its items (the trace rows the
 * denoiser set), so that stale rows written for other items are seen as such whatever
 * slot they were kept in. */
int rp_par_stale_who(const rp_parallel *p);
/* One check of the contract: got, the fingerprint of what the strategy used, and want,
 * what the contract says it must be (0: nothing qualifies, e.g. no rows computed for these
 * items at the evaluation the contract names), folded into the forward's pair; name and
 * due describe the first that failed ("kv.attn3.patch0", "read at step 4: due step 3's
 * rows for these items"): the pair's two names in the log. */
void rp_par_stale_pair(rp_parallel *p, uint64_t got, uint64_t want, const char *name, const char *due);
/* rp_par_stale_pair for the K/V rows of `patch` read by attention `layer`, due from step
 * `due`: named "kv.attn<layer>.patch<patch>", "read at step <now>: due, the rows computed at
 * step <due> for these items" (patch.c and pipefusion.c). */
void rp_par_stale_kv(rp_parallel *p, int layer, int patch, int due, uint64_t got, uint64_t want);
/* The text rows of the keys attention `layer` reads: K, V (BH, To, D) as handed to the
 * attention against k, v (BH, Tk, D) as the forward computed them, with Tl leading and Tr
 * trailing text tokens in both. Every approximate strategy keeps only image K/V across
 * steps, so the text rows are this forward's, at every step ("kv.attn<layer>.text").
 * scratch holds 2 * BH * max(Tl, Tr) * D floats (rp_par_kv_print's). */
void rp_par_stale_text(rp_parallel *p, int layer, const float *K, const float *V, int To, const float *k,
                       const float *v, int Tk, int Tl, int Tr, size_t BH, int D, float *scratch);
/* The layout's promise for the forward that just ran (rp_par_forward): from evaluation
 * stale_from on (its warmup_steps, set when the strategy was made) an approximate strategy
 * runs its asynchronous path (stale_seen, set by its K/V hooks), before it the synchronous
 * one; a forward with fresh keys (fresh_kv) is the strategy's own choice and not held. */
void rp_par_stale_async(rp_parallel *p);
/* The forward's folded pair into the log (STALE group), at the forward's end. */
void rp_par_stale_flush(rp_parallel *p);
/* Fingerprint of rows gathered from nbh blocks (b = 0 .. nbh - 1) of `rows` x D floats
 * each, block b at src + b * stride, k then v (the layout (2, nbh, rows, D) of a patch's
 * exchanged K/V); scratch holds 2 * nbh * rows * D floats. */
uint64_t rp_par_kv_print(const float *k, const float *v, size_t nbh, size_t rows, size_t D, size_t stride,
                         float *scratch);
/* The own check's pair (OWN group): a's and b's fingerprints (n floats each: the result,
 * then its recomputation), folded with the pairs held since the last trace point (a
 * layer's GEMMs and its attention) and held until the next one, whose name (the layer the
 * results feed) the first is noted under (rp_par_trace; at the forward's end under
 * "attention" if none came); the second is noted under `what` of the first pair that
 * differed, or of the last one ("ring attention", "flash attention", "GEMM"), which the
 * report gives as `other`. No-op without p->check_own. */
void rp_par_own_hold(rp_parallel *p, const float *a, const float *b, size_t n, const char *what);
/* The own check of a default rp_attention call's out (B, H, Tq, D) from its q, k, v,
 * key_mask and scale (attn_own.c): recomputed by separate code in the variant's order and
 * held as an own pair under "<variant> attention". No-op without p->check_own or under
 * numerics invariant. Host buffers only. Errors: RP_ERR_NOMEM, auto's selector's. */
rp_status rp_par_attn_own_check(const rp_ctx *ctx, const float *out, const float *q, const float *k, const float *v,
                                const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                rp_error *err);
/* Whether the own checks run whole at the current evaluation: check_own, and fwd_eval one
 * of own_at. A kernel does not know the step, so a fault in one acts at every call, or at
 * the calls whose inputs trigger it: the run's first evaluation (pure noise in) and its
 * last (nearly clean latents in) are the two most different inputs a run has; the third,
 * drawn per case (a sweep's cases cover the middle steps between them), catches a fault
 * keyed to the step at 3 / steps of the cost of checking every one. */
int rp_par_own_now(const rp_parallel *p);
/* Called once per default attention call at an evaluation where rp_par_own_now is false:
 * the one (batch, head) slice, of parts = B H, that this call's own check recomputes, or -1
 * (this call is not checked; always without check_own). Two calls a forward are checked:
 * the first (where a fault acting on every call is then named) and the evaluation's index
 * modulo the previous forward's number of calls, one slice of each, so a run's evaluations
 * rotate through the layers and the heads. Every evaluation is checked in part, at 2 / (B H
 * L) of its attention's cost: a fault at one step that acts on every call of a kernel (a
 * scale, a rescale) is seen at that step; one confined to a layer or a head, when the
 * rotation reaches it. */
int rp_par_own_slice(rp_parallel *p, int parts);
/* The rotation of rp_par_own_slice and of the default GEMMs' checks between the whole ones
 * (rp_par_forward): of a forward's calls (*call counts them, reset by the caller each
 * forward; calls_last the previous forward's count), the first is turn 0 and the one at
 * eval modulo calls_last turn 1; every other call -1 (unchecked). */
int rp_par_own_turn(int *call, int calls_last, int eval);
/* Notes a held pair under name (rp_par_trace and rp_par_forward_end call it). */
void rp_par_own_flush(const rp_ctx *ctx, const char *name);

/* ---- the guided batch's split (the rows that split RP_PAR_SPLITS_BATCH: cfg_par.c) ---- */

/* The layout's strategy that splits the guided batch (its degree > 1), or NULL (and for
 * ctx->par NULL): the denoisers name it in their messages. */
const rp_par_strategy_info *rp_par_batch_split(const rp_ctx *ctx);
/* Which segment of the single-rank guided batch this rank evaluates: -1 all of them (no
 * strategy splits it), else 0 .. degree - 1 (its coordinate). */
int rp_par_batch_segment(const rp_ctx *ctx);
/* mine (n): this rank's segment's output -> all (degree, n): the segments in order, on
 * every rank of the group. produced: rp_par_fingerprint of that output where the caller's
 * forward produced it, which the exchange's contract holds every returned segment to (a
 * fingerprint taken inside the exchange would bless whatever the exchange did to mine
 * before it: audit 12's halves rounded to bf16 there). Without a strategy that splits the
 * batch: RP_ERR_INVALID. */
rp_status rp_par_batch_exchange(const rp_ctx *ctx, const float *mine, size_t n, uint64_t produced, float *all,
                                rp_error *err);

/* timestep-skew: the timestep the model gets at evaluation `eval` (t, or t_prev on
 * ranks > 0 at evaluation 1 when injected). */
float rp_par_timestep(const rp_ctx *ctx, int eval, float t, float t_prev);

/* ---- the faults that act inside a model or the decoder (inject.h) ------------------- */

/* norm-eps-rank: the MLP LayerNorm's eps (eps, or 10 eps on the last rank when injected). */
float rp_par_norm_eps(const rp_ctx *ctx, float eps);
/* bf16-layer-rank: the context for block `block`'s MLP GEMMs: ctx, or (block 0 on the last
 * rank when injected) *tmp = ctx with precision bf16, returned. */
const rp_ctx *rp_par_mlp_ctx(const rp_ctx *ctx, int block, rp_ctx *tmp);
/* act-bf16-rank: block `block`'s MLP activation input x (n, host) in place: rounded to bf16
 * on the last rank for block 0 of a bf16 case under default numerics on the CPU when
 * injected; untouched otherwise. */
void rp_par_mlp_act_input(const rp_ctx *ctx, int block, float *x, size_t n);
/* temb-period-rank: a sinusoidal embedding's max_period (max_period, or max_period + 1 on
 * the last rank when injected). */
float rp_par_max_period(const rp_ctx *ctx, float max_period);
/* te-norm-eps-rank: the text encoder's LayerNorm epsilon (eps, or eps / 10 on the last rank
 * when injected). */
float rp_par_te_norm_eps(const rp_ctx *ctx, float eps);
/* vae-decode-rank: 1 when this rank's decoded images go to 8 bits by truncation instead of
 * rounding (the last dp group, whose leader decodes its images, when injected), else 0. */
int rp_par_rgb8_truncates(const rp_ctx *ctx);
/* noise-bf16-rank: on the last dp group, the initial noise (n floats) rounded to bf16 in
 * place (else nothing). */
void rp_par_noise_fault(const rp_ctx *ctx, float *noise, size_t n);
/* The latents (n) the free sampling loop carries into its next step, on this rank: kept as
 * they are, but under latents-bf16-rank the last dp group rounds them to bf16. A no-op
 * without a layout. */
void rp_par_carry(const rp_ctx *ctx, float *x, size_t n);
/* nondet-dp-rank: on the last dp group, x[0] of the guided prediction (n floats) moves up
 * by 1..1024 ulps chosen by the clock (else nothing). */
void rp_par_nondet(const rp_ctx *ctx, float *x, size_t n);
/* weight-leak-rank: on the last dp group, bias[0] (a loaded parameter, which every other
 * path only reads; NULL: nothing) moves up by 2^-20 (else nothing). */
void rp_par_weight_leak(const rp_ctx *ctx, const float *bias);

/* ---- dp (dp.c) --------------------------------------------------------------------------
 * Items cross ranks serialised: per item seed (u64 LE), class (i32 LE), prompt length
 * (u32 LE) and bytes; the list as count (u32 LE) + items. */

/* Broadcasts rank 0's items (its `mine`, n) to every rank; each rank checks the FNV-1a
 * 64 checksum rank 0 sent against the bytes it received, and (if it has its own list,
 * mine != NULL) that the lists agree. The verdicts are allreduced, so every rank fails
 * together with an error naming the ranks that disagree. On success *out (n_out items,
 * prompts pointing into *strings; free both) is rank 0's list. */
rp_status rp_par_dp_share_items(rp_parallel *p, const rp_gen_item *mine, int n, rp_gen_item **out,
                                int *n_out, char **strings, rp_error *err);

/* This dp group's contiguous block of all (n; dp must divide n): *first (its position)
 * and *count; local[0 .. count) get global_index = position (dp-shared-noise: 0 .. count-1).
 * Sets p->n_items_total and p->item_first. local must hold n items. */
rp_status rp_par_dp_select(rp_parallel *p, const rp_gen_item *all, int n, rp_gen_item *local,
                           int *first, int *count, rp_error *err);

/* Collective over the world: each dp group's leader (replica rank 0) sends its result
 * to rank 0, which fills *all with the n_total items in input order (group by group),
 * schedule fields from its own. rgb is gathered when the leaders decoded, a teacher run's
 * inputs (teacher_input) when it is one. Other ranks leave *all zeroed. */
rp_status rp_par_dp_gather(rp_parallel *p, const rp_gen_result *local, int n_total,
                           rp_gen_result *all, rp_error *err);

/* What rp_par_dp_gather_check found on rank 0: the first part of one group's result whose
 * gathered copy differs from what the group's leader holds — row 0..steps of the trajectory,
 * steps + 1 its final latents, steps + 2 its images — with the group and its leader's rank;
 * row -1: every copy is the leader's. */
typedef struct rp_par_gather_report {
    int row, group, rank;
} rp_par_gather_report;

/* Collective over the world, after rp_par_dp_gather: each dp group's leader sends rank 0 a
 * fingerprint of every trajectory row, of its final latents and of its images, with the
 * position of its first item (p->item_first: rp_par_dp_select's split, not the gather's own
 * bookkeeping); rank 0 fingerprints the same items of *all and reports the first part that
 * differs into *out (rank 0 only; others get row -1). A gather that unpacks a group's rows
 * at another offset leaves every computation right and the returned latents too, while the
 * stored trajectory, which the classifier's checks read, is another run's. */
rp_status rp_par_dp_gather_check(rp_parallel *p, const rp_gen_result *local, const rp_gen_result *all,
                                 rp_par_gather_report *out, rp_error *err);

/* 64-bit FNV-1a over n bytes. */
uint64_t rp_par_fnv1a64(const void *data, size_t n);

/* A 64-bit fingerprint of n floats' bits, for the replica and own logs (replica.c): four
 * FNV-1a-style lanes over 64-bit words, so it runs at memory speed where byte-wise
 * FNV-1a is bound by one multiply per byte. Each lane step h = (h ^ w) * odd is one-to-one
 * in h and in w, so two arrays that differ in one word always fingerprint differently. */
uint64_t rp_par_fingerprint(const float *x, size_t n);

#endif
