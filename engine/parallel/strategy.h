/* strategy.h — the parallel strategies as data: one descriptor per strategy (its degree,
 * exactness, what it reorders and keeps replicated, its report axis, its validation rules,
 * the entry points of its own code), the degrees of a layout, its world, and xDiT's rank
 * layout (parallel.h tells how each strategy runs). */
#ifndef REPRO_PAR_STRATEGY_H
#define REPRO_PAR_STRATEGY_H

#include <stddef.h>
#include <stdint.h>

#include "../error.h"

struct rp_ctx; /* engine/ctx.h */

typedef enum rp_par_exactness {
    RP_PAR_EXACT = 0,    /* equal to a single rank up to floating-point reordering */
    RP_PAR_WARMUP_EXACT  /* exact during warmup, approximate after it (stale activations) */
} rp_par_exactness;

/* The strategies with a degree, one X(T, member, case key) each, in xDiT's order outermost
 * first: a new strategy is an entry here and a row of the table (strategy.c), whose field
 * is the entry's case key (asserted in its test). The list declares the degrees
 * (RP_PAR_MEMBERS(int)), the views that name a degree's coordinate and group (rp_par_coords,
 * rp_parallel) and the case's view by its keys (RP_PAR_KEYS: harness/case/case.h's
 * c->cfg_parallel), so their layouts are the degrees' by construction. */
#define RP_PAR_DEGREE_LIST(X, T) \
    X(T, dp, dp)                 \
    X(T, cfg, cfg_parallel)      \
    X(T, pipefusion, pipefusion) \
    X(T, ulysses, ulysses)       \
    X(T, ring, ring)             \
    X(T, patch, patch)
#define RP_PAR_MEMBER_DECL_(T, member, key) T member;
#define RP_PAR_KEY_DECL_(T, member, key) T key;
/* The members, each declared `T member;` (write no ';' after the macro). */
#define RP_PAR_MEMBERS(T) RP_PAR_DEGREE_LIST(RP_PAR_MEMBER_DECL_, T)
/* The same members named by their case keys, each declared `T key;`. */
#define RP_PAR_KEYS(T) RP_PAR_DEGREE_LIST(RP_PAR_KEY_DECL_, T)

/* Only ints: the table addresses them by offset, and the count of members is
 * RP_PAR_N_DEGREES. Each >= 1. */
typedef struct rp_par_degrees {
    RP_PAR_MEMBERS(int)
} rp_par_degrees;

/* What a strategy's ranks divide among themselves: the composite groups are made of it
 * (rp_par_span). */
typedef enum rp_par_splits {
    RP_PAR_SPLITS_ITEMS = 0,  /* the items (dp): the ranks of one item block are a replica group */
    RP_PAR_SPLITS_BATCH,      /* the guided batch's branches (cfg): validated to need a model with
                               * classifier-free guidance and cfg > 1 (harness/sweep/validate.c); the
                               * denoisers reach its row's segment / exchange (rp_par_batch_segment) */
    RP_PAR_SPLITS_BLOCKS,     /* the model's blocks, as pipeline stages (pipefusion) */
    RP_PAR_SPLITS_SEQUENCE    /* the tokens (ulysses, ring, patch): together, the sequence group */
} rp_par_splits;

/* One parallel strategy: everything the engine, the validator, the classifier and the
 * reports need to know about it. A new strategy is a row here (plus its code). */
typedef struct rp_par_strategy_info {
    const char *name;          /* "dp" "cfg" "ulysses" "ring" "usp" "pipefusion" "patch" */
    const char *field;         /* its degree's case and matrix key ("cfg_parallel"); NULL: usp, a
                                * combination of two degrees */
    size_t degree;             /* offsetof(rp_par_degrees, its degree) (unused without a field) */
    rp_par_exactness exactness;
    const char *reorders;      /* which floating-point work changes order vs a single rank */
    const char *bitwise_when;  /* when the result is bitwise the single rank's */
    const char *replicated;    /* what every rank of its group holds a copy of: the tensors the
                                * replica check compares (engine/parallel/replica.c) */
    const char *axis;          /* the reports' axis label */
    const char *tag;           /* its degree's prefix in a case's short degrees text ("u" of "dp2 u2") */
    int nest;                  /* its axis in the rank layout, 0 innermost (xDiT's: ulysses, ring,
                                * patch, pipefusion, cfg, dp); unused without a field */
    rp_par_splits splits;      /* what its ranks divide (unused without a field) */
    int on_sequence_group;     /* 1: when used it is the layout's only sequence split (validated:
                                * patch), so its group is the sequence group, not a split of its own */
    int id_optional;           /* 1 for a strategy added after case ids were first stored: its
                                * degree 1 is left out of a case's id, so stored ids stay valid */
    int max_degree;            /* 0: any degree; else the largest (validated, with max_rule) */
    const char *max_rule;      /* the rule's text after "<field>=<degree>: " */
    /* splits RP_PAR_SPLITS_BATCH: the guided batch's split in the denoisers (its own file;
     * parallel.h's rp_par_batch_segment / rp_par_batch_exchange call them) */
    int (*batch_segment)(const struct rp_ctx *ctx);   /* this rank's segment of the batch */
    rp_status (*batch_exchange)(const struct rp_ctx *ctx, const float *mine, size_t n, uint64_t produced,
                                float *all, rp_error *err); /* mine (n) -> all (degree, n), segment order;
                                                               produced: mine's fingerprint at the forward */
} rp_par_strategy_info;

/* The strategies' own code the rows point to (their files, parallel.h tells what they do). */
int rp_par_cfg_segment(const struct rp_ctx *ctx);                                   /* cfg_par.c */
rp_status rp_par_cfg_exchange(const struct rp_ctx *ctx, const float *mine, size_t n, uint64_t produced, float *both,
                              rp_error *err);                                      /* cfg_par.c */

/* The strategy table; NULL for an unknown name. */
const rp_par_strategy_info *rp_par_strategy(const char *name);
int rp_par_strategy_count(void);
const rp_par_strategy_info *rp_par_strategy_at(int i);
/* "exact" | "warmup-exact" */
const char *rp_par_exactness_name(rp_par_exactness e);

/* The strategies with a degree of their own (a field), in the table's order: the
 * degrees of rp_par_degrees. */
enum { RP_PAR_N_DEGREES = (int)(sizeof(rp_par_degrees) / sizeof(int)) };
const rp_par_strategy_info *rp_par_degree_strategy(int i);
/* The same strategies in rp_par_degrees' member order, xDiT's, outermost first (dp, cfg,
 * pipefusion, ulysses, ring, patch): the order of layouts' texts and records. */
const rp_par_strategy_info *rp_par_member_strategy(int i);
/* s's degree in d (s must have a field), and its address. */
int rp_par_degree(const rp_par_degrees *d, const rp_par_strategy_info *s);
int *rp_par_degree_ptr(rp_par_degrees *d, const rp_par_strategy_info *s);

/* Texts of the degrees, for messages and labels; each truncates at cap:
 *   rp_par_fields_text  the degree fields in the table's order joined by sep
 *                       ("dp x cfg_parallel x ulysses x ring x pipefusion x patch" for sep " x ")
 *   rp_par_values_text  d's degrees in the same order joined by sep ("2x1x1x2x1x1" for "x")
 *   rp_par_named_text   "<name><kv><degree>" joined by sep in xDiT's order, outermost first
 *                       (rp_par_degrees'): "dp=2 cfg=1 pipefusion=1 ulysses=2 ring=1 patch=1"
 *   rp_par_tags_text    "<tag><degree>" of the degrees above 1, table order, joined by " "
 *                       ("dp2 u2"); "1" for the serial layout */
void rp_par_fields_text(const char *sep, char *buf, size_t cap);
void rp_par_values_text(const rp_par_degrees *d, const char *sep, char *buf, size_t cap);
void rp_par_named_text(const rp_par_degrees *d, const char *kv, const char *sep, char *buf, size_t cap);
void rp_par_tags_text(const rp_par_degrees *d, char *buf, size_t cap);

/* dp x cfg x pipefusion x ulysses x ring x patch: the world (the _ll form saturates at
 * LLONG_MAX, for degrees not validated yet; the int form is for validated layouts). */
int rp_par_world(const rp_par_degrees *d);
long long rp_par_world_ll(const rp_par_degrees *d);
/* The weakest contract among the strategies a layout uses (EXACT for a single rank). */
rp_par_exactness rp_par_layout_exactness(const rp_par_degrees *d);
/* The strategies a layout uses (degree > 1), in xDiT's order outermost first ("dp", "cfg",
 * "pipefusion", "usp" | "ulysses" | "ring", "patch"), into out; returns how many. */
int rp_par_layout_strategies(const rp_par_degrees *d, const rp_par_strategy_info *out[RP_PAR_N_DEGREES]);

/* A rank's place in the layout: one coordinate per degree (in 0..degree-1), at the
 * degree's offset (of: rp_par_degree / rp_par_degree_ptr address it through the table),
 * also readable by the strategies' names. */
typedef struct rp_par_coords {
    union {
        rp_par_degrees of;
        struct { RP_PAR_MEMBERS(int) }; /* of's members */
    };
    int sp;   /* index in the sequence group (rp_par_index_in of RP_PAR_SPAN_SEQUENCE):
               * (patch * ring + ring) * ulysses + ulysses */
} rp_par_coords;

/* rank -> coordinates, and back (the table's nest order: innermost ulysses, ring, patch,
 * pipefusion, cfg, dp outermost). */
void rp_par_coords_of(const rp_par_degrees *d, int rank, rp_par_coords *c);
int rp_par_rank_of(const rp_par_degrees *d, const rp_par_coords *c);

/* The composite groups, by the rows' splits: the sequence group (the strategies that split
 * the sequence) and the replica group (all but those that split the items: the ranks that
 * compute one item block together). */
typedef enum rp_par_span { RP_PAR_SPAN_SEQUENCE = 0, RP_PAR_SPAN_REPLICA = 1 } rp_par_span;
/* The coordinates span g varies, as 1 at their degrees' offsets in *vary (0 elsewhere). */
void rp_par_span_of(rp_par_span g, rp_par_degrees *vary);
/* c's index among the ranks whose coordinates differ from c's only where vary is nonzero,
 * numbered as the rank layout numbers them (innermost fastest); *size gets their count. */
int rp_par_index_in(const rp_par_degrees *d, const rp_par_coords *c, const rp_par_degrees *vary, int *size);
/* The first of those ranks (c with the coordinates vary spans set to 0): their leader. */
int rp_par_leader_of(const rp_par_degrees *d, const rp_par_coords *c, const rp_par_degrees *vary);

#endif
