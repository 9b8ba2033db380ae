/* dp.c — data parallelism: the item list from rank 0 to everyone (checksummed),
 * each dp group's block of it, and the results back to rank 0 in input order.
 *
 * Why the checksum and the comparison: every rank reads the case itself, and a
 * rank that generated from another list (xDiT's SD3 batch bug sent prompts to the
 * wrong ranks) produces plausible images of the wrong prompts. So rank 0's list is
 * broadcast, each rank verifies the bytes against rank 0's FNV-1a 64 and against its
 * own copy, and the verdicts are allreduced: a disagreement stops every rank with an
 * error naming the ranks, before any work. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"

enum { TAG_GATHER = 51, TAG_GATHER_CHECK = 52 };

#define NO_PROMPT 0xFFFFFFFFu /* a NULL prompt (DiT), distinct from "" */

uint64_t rp_par_fnv1a64(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get_u64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* items (n) -> *out (*len bytes, malloc'd): count, then seed, class, prompt length, bytes. */
static rp_status serialise(const rp_gen_item *items, int n, unsigned char **out, size_t *len, rp_error *err) {
    size_t bytes = 4;
    for (int i = 0; i < n; i++) bytes += 16 + (items[i].prompt ? strlen(items[i].prompt) : 0);
    unsigned char *b = malloc(bytes), *p = b;
    if (!b) return RP_FAIL(err, RP_ERR_NOMEM, "dp: out of memory serialising %d items", n);
    put_u32(p, (uint32_t)n);
    p += 4;
    for (int i = 0; i < n; i++) {
        const size_t pl = items[i].prompt ? strlen(items[i].prompt) : 0;
        put_u64(p, items[i].seed);
        put_u32(p + 8, (uint32_t)items[i].class_id);
        put_u32(p + 12, items[i].prompt ? (uint32_t)pl : NO_PROMPT);
        p += 16;
        memcpy(p, items[i].prompt ? items[i].prompt : "", pl);
        p += pl;
    }
    assert((size_t)(p - b) == bytes);
    *out = b;
    *len = bytes;
    return RP_OK;
}

/* The inverse; prompts are copied NUL-terminated into *strings. Global indices = positions. */
static rp_status parse(const unsigned char *b, size_t len, rp_gen_item **out, int *n_out, char **strings,
                       rp_error *err) {
    if (len < 4) return RP_FAIL(err, RP_ERR_FORMAT, "dp: item list of %zu bytes", len);
    const uint32_t n = get_u32(b);
    if (n > 1u << 20 || (size_t)n * 16 > len - 4) return RP_FAIL(err, RP_ERR_FORMAT, "dp: item list claims %u items", n);
    rp_gen_item *items = calloc(n ? n : 1, sizeof *items);
    char *s = malloc(len + n + 1); /* the prompt bytes and their NULs fit in len + n */
    if (!items || !s) {
        free(items);
        free(s);
        return RP_FAIL(err, RP_ERR_NOMEM, "dp: out of memory for %u items", n);
    }
    size_t at = 4, sp = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (at + 16 > len) goto bad;
        items[i].seed = get_u64(b + at);
        items[i].class_id = (int)get_u32(b + at + 8);
        const uint32_t pl = get_u32(b + at + 12);
        at += 16;
        items[i].global_index = i;
        if (pl == NO_PROMPT) {
            items[i].prompt = NULL;
            continue;
        }
        if (pl > len - at) goto bad;
        memcpy(s + sp, b + at, pl);
        s[sp + pl] = '\0';
        items[i].prompt = s + sp; /* s is not reallocated: pointers stay valid */
        sp += pl + 1;
        at += pl;
    }
    if (at != len) goto bad;
    *out = items;
    *n_out = (int)n;
    *strings = s;
    return RP_OK;
bad:
    free(items);
    free(s);
    return RP_FAIL(err, RP_ERR_FORMAT, "dp: the item list is truncated or has trailing bytes (%zu bytes)", len);
}

rp_status rp_par_dp_share_items(rp_parallel *p, const rp_gen_item *mine, int n, rp_gen_item **out, int *n_out,
                                char **strings, rp_error *err) {
    rp_comm *c = p->world_comm;
    unsigned char *own = NULL, *buf = NULL;
    size_t own_len = 0;
    float *verdict = NULL;
    rp_status st = RP_OK;
    *out = NULL;
    *strings = NULL;
    *n_out = 0;
    if (mine) RP_TRY(serialise(mine, n, &own, &own_len, err));
    if (p->rank == 0 && !mine) return RP_FAIL(err, RP_ERR_INVALID, "dp: rank 0 has no item list to share");
    /* header: length and checksum of rank 0's bytes */
    unsigned char hdr[16] = {0};
    if (p->rank == 0) {
        put_u64(hdr, own_len);
        put_u64(hdr + 8, rp_par_fnv1a64(own, own_len));
    }
    st = c->ops->broadcast(c, hdr, sizeof hdr, 0, err);
    const uint64_t len = get_u64(hdr), sum = get_u64(hdr + 8);
    if (st == RP_OK && (len < 4 || len > (64u << 20)))
        st = RP_FAIL(err, RP_ERR_COMM, "dp: rank %d received an item list length of %llu bytes", p->rank,
                     (unsigned long long)len);
    if (st == RP_OK && !(buf = malloc(len)))
        st = RP_FAIL(err, RP_ERR_NOMEM, "dp: out of memory for %llu bytes of items", (unsigned long long)len);
    if (st == RP_OK) {
        if (p->rank == 0) memcpy(buf, own, len);
        st = c->ops->broadcast(c, buf, len, 0, err);
    }
    if (st != RP_OK) goto done;
    /* verdicts: slot r = 1 (checksum), 2 (differs from its own list), 3 (both) */
    verdict = calloc((size_t)p->world, sizeof *verdict);
    if (!verdict) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "dp: out of memory");
        goto done;
    }
    const int bad_sum = rp_par_fnv1a64(buf, len) != sum;
    const int bad_own = mine && (own_len != len || memcmp(own, buf, len) != 0);
    verdict[p->rank] = (float)(bad_sum + 2 * bad_own);
    if ((st = c->ops->allreduce(c, verdict, (size_t)p->world, RP_REDUCE_SUM, err)) != RP_OK) goto done;
    char who[512] = "";
    int nbad = 0;
    for (int r = 0; r < p->world; r++) {
        if (verdict[r] == 0.0f) continue;
        const size_t at = strlen(who);
        if (nbad++ < 16)
            snprintf(who + at, sizeof who - at, "%s%d (%s)", at ? ", " : "", r,
                     verdict[r] == 1.0f ? "checksum mismatch" : verdict[r] == 2.0f ? "differs from its own case"
                                                                                   : "checksum and own case");
    }
    if (nbad) {
        st = RP_FAIL(err, RP_ERR_INVALID, "dp: the item list broadcast from rank 0 (%llu bytes, FNV-1a %016llx) "
                     "does not verify on rank%s %s", (unsigned long long)len, (unsigned long long)sum,
                     nbad > 1 ? "s" : "", who);
        goto done;
    }
    st = parse(buf, len, out, n_out, strings, err);
done:
    free(own);
    free(buf);
    free(verdict);
    return st;
}

rp_status rp_par_dp_select(rp_parallel *p, const rp_gen_item *all, int n, rp_gen_item *local, int *first,
                           int *count, rp_error *err) {
    const int dp = p->deg.dp;
    if (n < 1 || n % dp)
        return RP_FAIL(err, RP_ERR_INVALID, "dp=%d needs the item count divisible by %d (got %d items; as xDiT, "
                       "items are not padded)", dp, dp, n);
    /* dp-rank-layout: xDiT's SD3 bug takes the dp index as rank // dp_degree; wrapped
     * modulo dp so a group still gets a block (Python's slice would be empty) */
    const int g = p->fault == RP_INJECT_DP_RANK_LAYOUT ? (p->rank / dp) % dp : p->dp.pos;
    const int per = n / dp;
    *first = g * per;
    *count = per;
    for (int i = 0; i < per; i++) {
        local[i] = all[*first + i];
        local[i].global_index = p->fault == RP_INJECT_DP_SHARED_NOISE ? (uint64_t)i : (uint64_t)(*first + i);
    }
    p->n_items_total = n;
    p->item_first = *first;
    return RP_OK;
}

/* ---- gather ----------------------------------------------------------------------------- */

/* The world rank of dp group g's leader (its replica position 0): g * (world / dp) unless
 * the layout is rotated. */
static int group_leader(const rp_parallel *p, int g) {
    rp_par_coords lead = {0};
    lead.dp = g;
    return rp_par_data_rank(p, &lead);
}

/* What a leader sends before its payload (int64 each). */
enum { H_COUNT, H_FIRST, H_PER, H_STEPS, H_RGB, H_RGB_BYTES, H_TEACHER_INPUT, H_N };

/* Sends B items of item_bytes each from src to rank 0 on the gather tag, in order, or
 * last-first when reversed (a fault's wrong order; what names the items in the message). */
static rp_status send_items(rp_comm *c, const void *src, size_t B, size_t item_bytes, int reversed, const char *what,
                            rp_error *err) {
    if (!reversed) return c->ops->send(c, src, B * item_bytes, 0, TAG_GATHER, err);
    unsigned char *rev = malloc(B * item_bytes);
    if (!rev) return RP_FAIL(err, RP_ERR_NOMEM, "dp gather: out of memory for %zu items of %s", B, what);
    const unsigned char *from = src;
    for (size_t b = 0; b < B; b++) memcpy(rev + b * item_bytes, from + (B - 1 - b) * item_bytes, item_bytes);
    const rp_status st = c->ops->send(c, rev, B * item_bytes, 0, TAG_GATHER, err);
    free(rev);
    return st;
}

rp_status rp_par_dp_gather(rp_parallel *p, const rp_gen_result *local, int n_total, rp_gen_result *all,
                           rp_error *err) {
    memset(all, 0, sizeof *all);
    const int dp = p->deg.dp;
    const int leader = p->replica.pos == 0;
    if (!leader && p->rank != 0) return RP_OK; /* rank 0 gathers, a leader or not (rotated) */
    rp_comm *c = p->world_comm;
    const size_t per = (size_t)local->C * local->h * local->w, N = (size_t)local->steps;
    const size_t rgb_item = local->rgb ? (size_t)local->H * local->W * 3 : 0;
    const int tin = local->teacher_input != NULL;
    int64_t hdr[H_N] = {local->B, p->item_first, (int64_t)per, (int64_t)N, local->rgb != NULL, (int64_t)rgb_item,
                        tin};
    if (p->rank != 0) {
        /* payload: noise, latents, trajectory, a teacher run's inputs (floats), then rgb
         * (bytes). dp-latents-order: the last group's leader sends its final latents
         * last-first (its trajectory in order); dp-image-order: its images last-first (its
         * latents in order) */
        const size_t B = (size_t)local->B;
        const int last = p->at.dp == dp - 1;
        rp_status st = c->ops->send(c, hdr, sizeof hdr, 0, TAG_GATHER, err);
        if (st == RP_OK) st = c->ops->send(c, local->noise, sizeof(float) * B * per, 0, TAG_GATHER, err);
        if (st == RP_OK)
            st = send_items(c, local->latents, B, sizeof(float) * per, last && p->fault == RP_INJECT_DP_LATENTS_ORDER,
                            "final latents", err);
        if (st == RP_OK) st = c->ops->send(c, local->trajectory, sizeof(float) * (N + 1) * B * per, 0, TAG_GATHER, err);
        if (st == RP_OK && tin)
            st = c->ops->send(c, local->teacher_input, sizeof(float) * N * B * per, 0, TAG_GATHER, err);
        if (st == RP_OK && local->rgb)
            st = send_items(c, local->rgb, B, rgb_item, last && p->fault == RP_INJECT_DP_IMAGE_ORDER, "images", err);
        return st;
    }
    /* rank 0: its own result's scalars (every rank's are the same), then every group's items
     * in group order, each from the rank that computed it (rp_par_data_rank) */
    *all = *local;
    all->noise = all->latents = all->trajectory = all->teacher_input = NULL;
    all->timesteps = all->alphas_cumprod = all->sigmas = all->model_t = NULL;
    all->rgb = NULL;
    all->B = n_total;
    const size_t n = (size_t)n_total;
    all->noise = malloc(sizeof(float) * n * per);                  /* (n, C, h, w) */
    all->latents = malloc(sizeof(float) * n * per);                /* (n, C, h, w) */
    all->trajectory = malloc(sizeof(float) * (N + 1) * n * per);   /* (N + 1, n, C, h, w) */
    if (tin) all->teacher_input = malloc(sizeof(float) * (N ? N : 1) * n * per); /* (N, n, C, h, w) */
    all->timesteps = malloc(sizeof(double) * N);
    if (local->alphas_cumprod) all->alphas_cumprod = malloc(sizeof(double) * N);
    if (local->sigmas) all->sigmas = malloc(sizeof(double) * (N + 1));
    if (local->model_t) all->model_t = malloc(sizeof(double) * N);
    if (local->rgb) all->rgb = malloc(n * rgb_item);
    rp_status st = RP_OK;
    if (!all->noise || !all->latents || !all->trajectory || !all->timesteps || (tin && !all->teacher_input) ||
        (local->alphas_cumprod && !all->alphas_cumprod) || (local->sigmas && !all->sigmas) ||
        (local->model_t && !all->model_t) || (local->rgb && !all->rgb)) {
        st = RP_FAIL(err, RP_ERR_NOMEM, "dp gather: out of memory for %d items", n_total);
        goto fail;
    }
    memcpy(all->timesteps, local->timesteps, sizeof(double) * N);
    if (local->alphas_cumprod) memcpy(all->alphas_cumprod, local->alphas_cumprod, sizeof(double) * N);
    if (local->sigmas) memcpy(all->sigmas, local->sigmas, sizeof(double) * (N + 1));
    if (local->model_t) memcpy(all->model_t, local->model_t, sizeof(double) * N);
    size_t off = 0;
    float *tmp = NULL;
    for (int g = 0; g < dp && st == RP_OK; g++) {
        const int from = group_leader(p, g);
        int64_t h[H_N];
        if (from == 0) memcpy(h, hdr, sizeof h);
        else if ((st = c->ops->recv(c, h, sizeof h, from, TAG_GATHER, err)) != RP_OK) break;
        if (h[H_COUNT] < 1 || h[H_PER] != (int64_t)per || h[H_STEPS] != (int64_t)N || h[H_RGB] != (local->rgb != NULL) ||
            h[H_RGB_BYTES] != (int64_t)rgb_item || h[H_TEACHER_INPUT] != tin || off + (size_t)h[H_COUNT] > n) {
            st = RP_FAIL(err, RP_ERR_COMM, "dp gather: group %d (rank %d) sent %lld items of %lld floats, %lld steps, "
                         "rgb %lld, teacher inputs %lld; rank 0 expects %zu floats, %zu steps, rgb %d, teacher inputs %d "
                         "and %zu items left", g, from, (long long)h[H_COUNT], (long long)h[H_PER],
                         (long long)h[H_STEPS], (long long)h[H_RGB], (long long)h[H_TEACHER_INPUT], per, N,
                         local->rgb != NULL, tin, n - off);
            break;
        }
        const size_t B = (size_t)h[H_COUNT];
        if (from == 0) {
            memcpy(all->noise + off * per, local->noise, sizeof(float) * B * per);
            memcpy(all->latents + off * per, local->latents, sizeof(float) * B * per);
            for (size_t s = 0; s <= N; s++)
                memcpy(all->trajectory + (s * n + off) * per, local->trajectory + s * B * per, sizeof(float) * B * per);
            for (size_t s = 0; tin && s < N; s++)
                memcpy(all->teacher_input + (s * n + off) * per, local->teacher_input + s * B * per,
                       sizeof(float) * B * per);
            if (local->rgb) memcpy(all->rgb + off * rgb_item, local->rgb, B * rgb_item);
        } else {
            st = c->ops->recv(c, all->noise + off * per, sizeof(float) * B * per, from, TAG_GATHER, err);
            if (st == RP_OK) st = c->ops->recv(c, all->latents + off * per, sizeof(float) * B * per, from, TAG_GATHER, err);
            if (st == RP_OK && !(tmp = malloc(sizeof(float) * (N + 1) * B * per)))
                st = RP_FAIL(err, RP_ERR_NOMEM, "dp gather: out of memory for group %d's trajectory", g);
            if (st == RP_OK) st = c->ops->recv(c, tmp, sizeof(float) * (N + 1) * B * per, from, TAG_GATHER, err);
            /* dp-gather-row: the last group's middle row copied from the row before it */
            const size_t stale = p->fault == RP_INJECT_DP_GATHER_ROW && g == dp - 1 && N >= 2 ? N / 2 : 0;
            if (st == RP_OK)
                for (size_t s = 0; s <= N; s++)
                    memcpy(all->trajectory + (s * n + off) * per, tmp + (s == stale && s ? s - 1 : s) * B * per,
                           sizeof(float) * B * per);
            /* the teacher inputs: fewer rows than the trajectory, into the same buffer */
            if (st == RP_OK && tin) st = c->ops->recv(c, tmp, sizeof(float) * N * B * per, from, TAG_GATHER, err);
            for (size_t s = 0; st == RP_OK && tin && s < N; s++)
                memcpy(all->teacher_input + (s * n + off) * per, tmp + s * B * per, sizeof(float) * B * per);
            free(tmp);
            tmp = NULL;
            if (st == RP_OK && local->rgb)
                st = c->ops->recv(c, all->rgb + off * rgb_item, B * rgb_item, from, TAG_GATHER, err);
        }
        off += B;
    }
    if (st == RP_OK && off != n)
        st = RP_FAIL(err, RP_ERR_COMM, "dp gather: the groups sent %zu items, the run has %zu", off, n);
    if (st == RP_OK) return RP_OK;
fail:
    rp_gen_result_free(all);
    return st;
}

/* prints (steps + 3): the fingerprints of B items of per floats (rgb_item bytes of image
 * each) whose trajectory row s starts at traj + s * stride, latents at lat, images at rgb
 * (NULL: none, printed 0). */
static void group_prints(uint64_t *prints, size_t steps, const float *traj, size_t stride, const float *lat,
                         const unsigned char *rgb, size_t B, size_t per, size_t rgb_item) {
    for (size_t s = 0; s <= steps; s++) prints[s] = rp_par_fingerprint(traj + s * stride, B * per);
    prints[steps + 1] = rp_par_fingerprint(lat, B * per);
    prints[steps + 2] = rgb ? rp_par_fnv1a64(rgb, B * rgb_item) : 0;
}

rp_status rp_par_dp_gather_check(rp_parallel *p, const rp_gen_result *local, const rp_gen_result *all,
                                 rp_par_gather_report *out, rp_error *err) {
    *out = (rp_par_gather_report){.row = -1, .group = -1, .rank = -1};
    if (p->replica.pos != 0 && p->rank != 0) return RP_OK; /* the leaders hold the results */
    rp_comm *c = p->world_comm;
    const int dp = p->deg.dp;
    const size_t per = (size_t)local->C * local->h * local->w, N = (size_t)local->steps, np = N + 3;
    const size_t rgb_item = local->rgb ? (size_t)local->H * local->W * 3 : 0;
    uint64_t *msg = malloc(sizeof(uint64_t) * (np + 2)), *mine = msg + 2; /* first, count, prints */
    uint64_t *theirs = malloc(sizeof(uint64_t) * (np + 2)), *gathered = malloc(sizeof(uint64_t) * np);
    rp_status st = msg && theirs && gathered ? RP_OK : RP_FAIL(err, RP_ERR_NOMEM, "dp gather check: out of memory");
    if (st == RP_OK) {
        msg[0] = (uint64_t)p->item_first;
        msg[1] = (uint64_t)local->B;
        group_prints(mine, N, local->trajectory, (size_t)local->B * per, local->latents, local->rgb, (size_t)local->B,
                     per, rgb_item);
    }
    if (st == RP_OK && p->rank != 0) st = c->ops->send(c, msg, sizeof(uint64_t) * (np + 2), 0, TAG_GATHER_CHECK, err);
    for (int g = 0; st == RP_OK && p->rank == 0 && g < dp; g++) {
        const int from = group_leader(p, g);
        if (from == 0) memcpy(theirs, msg, sizeof(uint64_t) * (np + 2));
        else st = c->ops->recv(c, theirs, sizeof(uint64_t) * (np + 2), from, TAG_GATHER_CHECK, err);
        if (st != RP_OK || out->row >= 0) continue; /* every leader's message is received */
        const size_t first = (size_t)theirs[0], B = (size_t)theirs[1], n = (size_t)all->B;
        if (first > n || B > n - first) { /* items the run does not have: nothing is theirs */
            *out = (rp_par_gather_report){.row = 0, .group = g, .rank = from};
            continue;
        }
        group_prints(gathered, N, all->trajectory + first * per, n * per, all->latents + first * per,
                     all->rgb ? all->rgb + first * rgb_item : NULL, B, per, rgb_item);
        for (size_t r = 0; r < np; r++)
            if (gathered[r] != theirs[2 + r]) {
                *out = (rp_par_gather_report){.row = (int)r, .group = g, .rank = from};
                break;
            }
    }
    free(msg);
    free(theirs);
    free(gathered);
    return st;
}
