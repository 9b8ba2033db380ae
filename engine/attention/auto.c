/* auto.c — attention "auto": pick a variant the way real stacks pick their
 * attention kernel, from a device profile instead of a GPU (rules in attention.h).
 *
 * Why this exists: cross-GPU image differences in Fooocus came down to PyTorch
 * 2.x choosing a different SDPA kernel per machine; forcing one kernel removed
 * most of them. The frameworks' logic, learned from their sources:
 *   - PyTorch SDPA (sdp_utils): try flash, then mem-efficient, then math; each
 *     backend has gates (compute capability, head dim, no attn_mask for flash).
 *     Its CPU flash kernel tiles queries by 32/64/256 (Tq < 192 / < 768 / >= 768)
 *     and keys by 512; the cutlass mem-efficient kernel uses 64x64 tiles for head
 *     dim <= 64 and 32x128 above.
 *   - ComfyUI/Fooocus without PyTorch attention: sub-quadratic by default, split
 *     when asked; split slices by powers of two from free memory, sub-quadratic
 *     picks its query chunk from free memory and skips key chunking when it fits.
 * The result is deterministic in (profile, shapes), and the reason text says
 * which gate decided, with the numbers, so a report can quote it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"

/* Appends printf text to c->reason (truncating at its size). */
static void say(rp_attn_choice *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(rp_attn_choice *c, const char *fmt, ...) {
    size_t used = strlen(c->reason);
    if (used + 1 >= sizeof c->reason) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason + used, sizeof c->reason - used, fmt, ap);
    va_end(ap);
}

static double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

/* ComfyUI's sub-quadratic chunk rule (attention_sub_quad), bytes fp32. */
static void comfy_subquad(const rp_device_profile *p, double BH, int Tk, rp_attn_choice *c) {
    static const int xs[5] = {4096, 2048, 1024, 512, 256};
    c->kind = RP_ATTN_SUBQUAD;
    for (int i = 0; i < 5; i++) {
        double count = (double)p->mem_free / (BH * 4.0 * xs[i] * 4.0);
        if (count >= Tk) {
            c->q_chunk = xs[i];
            c->kv_chunk = Tk;
            say(c, "sub-quadratic chunks: q chunk %d since %.1f GiB / (B*H=%.0f * 4 B * %d * 4) = %.0f >= "
                "Tk=%d keys, kv chunk = Tk (no key chunking: the plain-softmax fast path)", xs[i],
                gib((double)p->mem_free), BH, xs[i], count, Tk);
            return;
        }
    }
    c->q_chunk = 512;
    c->kv_chunk = (int)sqrt((double)Tk);
    if (c->kv_chunk < 1) c->kv_chunk = 1;
    say(c, "sub-quadratic chunks: even a q chunk of 256 leaves %.1f GiB / (B*H=%.0f * 4 B * 256 * 4) < "
        "Tk=%d keys, so q chunk 512 and kv chunk floor(sqrt(Tk)) = %d", gib((double)p->mem_free), BH, Tk,
        c->kv_chunk);
}

rp_status rp_attn_auto_choose(const rp_device_profile *p, const rp_attn_cfg *override, int B, int H,
                              int Tq, int Tk, int D, int masked, rp_attn_choice *out, rp_error *err) {
    if (!p || !out) return RP_FAIL(err, RP_ERR_INVALID, "attention auto: NULL profile or output");
    if (B < 1 || H < 1 || D < 1 || Tq < 0 || Tk < 0)
        return RP_FAIL(err, RP_ERR_INVALID, "attention auto: bad shape B=%d H=%d Tq=%d Tk=%d D=%d", B, H,
                       Tq, Tk, D);
    if (p->mem_free <= 0)
        return RP_FAIL(err, RP_ERR_INVALID, "attention auto: device profile '%s' has no free memory "
                       "figure (mem=%lld); give one with --device-profile mem=SIZE", p->name, p->mem_free);
    rp_attn_choice c;
    memset(&c, 0, sizeof c);
    const double BH = (double)B * H;
    say(&c, "profile %s (%s, %.1f GiB free, %s): B=%d H=%d Tq=%d Tk=%d D=%d%s; ", p->name[0] ? p->name : "?",
        rp_simd_name(p->simd), gib((double)p->mem_free), p->sdpa ? "PyTorch SDPA" :
        p->split ? "ComfyUI split attention" : "ComfyUI sub-quadratic attention", B, H, Tq, Tk, D,
        masked ? ", key mask" : "");

    if (p->sdpa) {
        say(&c, "SDPA tries flash > mem-efficient > math: ");
        int flash_ok = 1;
        if (p->simd < RP_SIMD_AVX512) { say(&c, "flash needs avx512 (~SM80), have %s", rp_simd_name(p->simd)); flash_ok = 0; }
        else if (D % 8) { say(&c, "flash needs head dim %% 8 == 0, D=%d", D); flash_ok = 0; }
        else if (D > p->flash_max_head_dim) { say(&c, "flash takes head dim <= %d, D=%d", p->flash_max_head_dim, D); flash_ok = 0; }
        else if (masked) { say(&c, "flash takes no attn_mask and this call has a key mask"); flash_ok = 0; }
        if (flash_ok) {
            c.kind = RP_ATTN_FLASH;
            snprintf(c.backend, sizeof c.backend, "sdpa-flash");
            c.q_chunk = Tq >= 768 ? 256 : Tq >= 192 ? 64 : 32;
            c.kv_chunk = 512;
            say(&c, "flash OK (avx512, D=%d %% 8 == 0 and <= %d, no mask); tiles q %d (PyTorch CPU flash: Tq %s) "
                "x kv 512", D, p->flash_max_head_dim, c.q_chunk,
                Tq >= 768 ? ">= 768" : Tq >= 192 ? "in [192, 768)" : "< 192");
        } else if (p->simd >= RP_SIMD_AVX2 && D % 4 == 0) {
            c.kind = RP_ATTN_FLASH;
            snprintf(c.backend, sizeof c.backend, "sdpa-mem-efficient");
            c.q_chunk = D <= 64 ? 64 : 32;
            c.kv_chunk = D <= 64 ? 64 : 128;
            say(&c, "; mem-efficient OK (%s >= avx2 ~SM50, D=%d %% 4 == 0): its cutlass kernel is an online "
                "softmax, run as flash with its tiles q %d x kv %d (D %s 64)", rp_simd_name(p->simd), D,
                c.q_chunk, c.kv_chunk, D <= 64 ? "<=" : ">");
        } else {
            c.kind = RP_ATTN_MATH;
            snprintf(c.backend, sizeof c.backend, "sdpa-math");
            if (p->simd < RP_SIMD_AVX2) say(&c, "; mem-efficient needs avx2 (~SM50), have %s", rp_simd_name(p->simd));
            else say(&c, "; mem-efficient needs head dim %% 4 == 0, D=%d", D);
            say(&c, "; so math");
        }
    } else if (p->split) {
        double need = BH * Tq * (double)Tk * 4.0 * 3.0;
        long steps = 1;
        if (need > (double)p->mem_free) {
            double lg = ceil(log2(need / (double)p->mem_free));
            steps = lg > 30 ? (1L << 30) : 1L << (int)lg; /* anything past 64 only means "too many" */
        }
        say(&c, "split needs B*H*Tq*Tk*4 B*3 = %.2f GiB vs %.1f GiB free -> %ld step%s", gib(need),
            gib((double)p->mem_free), steps, steps == 1 ? "" : "s");
        if (steps > 64) {
            snprintf(c.backend, sizeof c.backend, "comfy-subquad");
            say(&c, "; > 64 steps, where ComfyUI raises out-of-memory: sub-quadratic instead; ");
            comfy_subquad(p, BH, Tk, &c);
        } else {
            c.kind = RP_ATTN_SPLIT;
            snprintf(c.backend, sizeof c.backend, "comfy-split");
            c.q_chunk = Tq % steps == 0 && Tq > 0 ? (int)(Tq / steps) : (Tq > 0 ? Tq : 1);
            if (steps > 1 && Tq % steps)
                say(&c, "; Tq=%d is not divisible by %ld, so one slice of all %d rows (ComfyUI's rule)", Tq,
                    steps, Tq);
            else say(&c, "; slices of %d query rows", c.q_chunk);
        }
    } else {
        snprintf(c.backend, sizeof c.backend, "comfy-subquad");
        say(&c, "no PyTorch attention on this device, so ComfyUI's default; ");
        comfy_subquad(p, BH, Tk, &c);
    }

    /* explicit sizes win where the chosen variant has the parameter */
    if (override && c.kind != RP_ATTN_MATH) {
        if (override->q_chunk > 0 && override->q_chunk != c.q_chunk) {
            say(&c, "; q chunk %d set by option (auto picked %d)", override->q_chunk, c.q_chunk);
            c.q_chunk = override->q_chunk;
        }
        if (override->kv_chunk > 0 && c.kind != RP_ATTN_SPLIT && override->kv_chunk != c.kv_chunk) {
            say(&c, "; kv chunk %d set by option (auto picked %d)", override->kv_chunk, c.kv_chunk);
            c.kv_chunk = override->kv_chunk;
        }
    }
    if (override && ((c.kind == RP_ATTN_MATH && (override->q_chunk > 0 || override->kv_chunk > 0)) ||
                     (c.kind == RP_ATTN_SPLIT && override->kv_chunk > 0)))
        say(&c, "; chunk option(s) not applicable to %s, ignored", rp_attn_kind_name(c.kind));
    if (c.q_chunk < 1 && c.kind != RP_ATTN_MATH) c.q_chunk = 1;  /* Tq = 0 */
    if (c.kv_chunk < 1 && (c.kind == RP_ATTN_SUBQUAD || c.kind == RP_ATTN_FLASH)) c.kv_chunk = 1;  /* Tk = 0 */
    *out = c;
    return RP_OK;
}

rp_device_profile rp_attn_profile_of(const rp_ctx *ctx) {
    return ctx->device.name[0] ? ctx->device : rp_device_profile_host();
}
