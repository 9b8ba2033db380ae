/* test_tokenizer.c — the text encoder's byte-level tokenizer, plus the encoder's
 * determinism and padding contracts (engine/models/text_encoder.h).
 *
 * Tokens: 0 pad, 1 bos, 2 eos, 3 + byte. Multi-byte characters are written as
 * escapes next to the u8"" literal, so the expected bytes do not depend on the
 * source file's encoding. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ctx.h"
#include "engine/models/text_encoder.h"
#include "engine/params.h"
#include "engine/synthetic.h"

#define B3(c) (RP_TE_BYTE0 + (int32_t)(unsigned char)(c)) /* token of byte c */

/* Checks tokens/mask against want (n entries; the rest must be pad / 0). */
static void expect(const int32_t *tok, const uint8_t *mask, int max_len, const int32_t *want, int n) {
    for (int i = 0; i < max_len; i++) {
        const int32_t w = i < n ? want[i] : RP_TE_PAD;
        ck_assert_msg(tok[i] == w, "token %d: got %d, want %d", i, tok[i], w);
        if (mask) ck_assert_msg(mask[i] == (i < n), "mask %d: got %d, want %d", i, mask[i], i < n);
    }
}

START_TEST(test_ascii) {
    int32_t tok[8];
    uint8_t mask[8];
    const int n = rp_te_tokenize("abc", 8, tok, mask);
    ck_assert_int_eq(n, 5);
    const int32_t want[] = {RP_TE_BOS, 3 + 'a', 3 + 'b', 3 + 'c', RP_TE_EOS};
    expect(tok, mask, 8, want, 5);
    ck_assert_int_eq(tok[1], 100); /* 'a' = 97 -> 100: the byte offset is 3 */
}
END_TEST

START_TEST(test_empty_is_unconditional) {
    int32_t tok[6], tok2[6];
    uint8_t mask[6], mask2[6];
    ck_assert_int_eq(rp_te_tokenize("", 6, tok, mask), 2);
    const int32_t want[] = {RP_TE_BOS, RP_TE_EOS};
    expect(tok, mask, 6, want, 2);
    /* NULL is the empty prompt */
    ck_assert_int_eq(rp_te_tokenize(NULL, 6, tok2, mask2), 2);
    ck_assert_mem_eq(tok, tok2, sizeof tok);
    ck_assert_mem_eq(mask, mask2, sizeof mask);
}
END_TEST

START_TEST(test_multibyte_utf8) {
    /* é = C3 A9 (2 bytes), 東 = E6 9D B1 (3), 🌸 = F0 9F 8C B8 (4) */
    const char *s = u8"é東🌸";
    ck_assert_str_eq(s, "\xc3\xa9\xe6\x9d\xb1\xf0\x9f\x8c\xb8");
    int32_t tok[16];
    uint8_t mask[16];
    ck_assert_int_eq(rp_te_tokenize(s, 16, tok, mask), 11);
    const int32_t want[] = {RP_TE_BOS, B3(0xc3), B3(0xa9), B3(0xe6), B3(0x9d), B3(0xb1),
                            B3(0xf0), B3(0x9f), B3(0x8c), B3(0xb8), RP_TE_EOS};
    expect(tok, mask, 16, want, 11);
    /* the top byte maps to the last vocabulary entry */
    ck_assert_int_eq(rp_te_tokenize("\xff", 4, tok, NULL), 3);
    ck_assert_int_eq(tok[1], RP_TE_VOCAB - 1);
}
END_TEST

START_TEST(test_truncation_keeps_eos) {
    int32_t tok[5];
    uint8_t mask[5];
    /* max_len 5 leaves room for 3 bytes between bos and eos */
    ck_assert_int_eq(rp_te_tokenize("abcdefgh", 5, tok, mask), 5);
    const int32_t want[] = {RP_TE_BOS, 3 + 'a', 3 + 'b', 3 + 'c', RP_TE_EOS};
    expect(tok, mask, 5, want, 5);
    /* exactly full: no pad, nothing dropped */
    ck_assert_int_eq(rp_te_tokenize("abc", 5, tok, mask), 5);
    expect(tok, mask, 5, want, 5);
    /* one byte too many drops exactly that byte */
    ck_assert_int_eq(rp_te_tokenize("abcd", 5, tok, mask), 5);
    expect(tok, mask, 5, want, 5);
    /* the minimum length keeps only bos and eos */
    int32_t t2[2];
    ck_assert_int_eq(rp_te_tokenize("abc", 2, t2, NULL), 2);
    ck_assert_int_eq(t2[0], RP_TE_BOS);
    ck_assert_int_eq(t2[1], RP_TE_EOS);
}
END_TEST

START_TEST(test_truncation_splits_character) {
    /* byte-level: a cut may fall inside a multi-byte character (é = C3 A9) */
    int32_t tok[4];
    ck_assert_int_eq(rp_te_tokenize("a\xc3\xa9", 4, tok, NULL), 4);
    const int32_t want[] = {RP_TE_BOS, 3 + 'a', B3(0xc3), RP_TE_EOS};
    expect(tok, NULL, 4, want, 4);
}
END_TEST

START_TEST(test_padding_and_mask) {
    enum { L = 77 };
    int32_t tok[L];
    uint8_t mask[L];
    memset(tok, 0x55, sizeof tok); /* garbage in: every entry must be written */
    memset(mask, 0x55, sizeof mask);
    const int n = rp_te_tokenize("a photo of a cat", L, tok, mask);
    ck_assert_int_eq(n, 18);
    ck_assert_int_eq(tok[n - 1], RP_TE_EOS);
    for (int i = 0; i < L; i++) {
        ck_assert_int_eq(mask[i], i < n);
        if (i >= n) ck_assert_int_eq(tok[i], RP_TE_PAD);
        if (i > 0 && i < n - 1) ck_assert_int_ge(tok[i], RP_TE_BYTE0);
    }
}
END_TEST

START_TEST(test_presets) {
    rp_te_config c;
    rp_error err;
    ck_assert_int_eq(rp_te_preset("te-tiny", &c, &err), RP_OK);
    ck_assert_int_eq(c.max_len, 32);
    ck_assert_int_eq(c.hidden, 64);
    ck_assert_int_eq(c.context_dim, 64);
    ck_assert_int_eq(c.pooled_dim, 64);
    ck_assert_int_eq(c.vocab, RP_TE_VOCAB);
    ck_assert_int_eq(rp_te_preset("te-sd3", &c, &err), RP_OK);
    ck_assert_int_eq(c.max_len, 77);
    ck_assert_int_eq(c.context_dim, 4096);
    ck_assert_int_eq(c.pooled_dim, 2048);
    ck_assert_int_eq(rp_te_preset("te-flux", &c, &err), RP_OK);
    ck_assert_int_eq(c.max_len, 512);
    ck_assert_int_eq(c.pooled_dim, 768);
    ck_assert_int_eq(rp_te_preset("t5-xxl", &c, &err), RP_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(err.msg, "te-tiny"));
    /* every name carries the prefix the SD3/FLUX checkpoints share a file under */
    rp_param_list l = {0};
    ck_assert_int_eq(rp_te_preset("te-tiny", &c, &err), RP_OK);
    rp_te_param_specs(&c, &l);
    for (int i = 0; i < l.n; i++) ck_assert(strncmp(l.specs[i].name, "text_encoder.", 13) == 0);
    /* 2 embeddings + depth x 12 + final_ln 2 + two projections x 2 */
    ck_assert_int_eq(l.n, 2 + 2 * 12 + 2 + 4);
    rp_params_free(&l);
}
END_TEST

/* The encoder on te-tiny synthetic weights (in memory): same prompts -> same bytes,
 * mask = tokenizer mask, pad rows exactly 0, different prompts -> different outputs. */
START_TEST(test_encode_contracts) {
    rp_te_config cfg;
    rp_error err;
    ck_assert_int_eq(rp_te_preset("te-tiny", &cfg, &err), RP_OK);
    rp_param_list l = {0};
    rp_te_param_specs(&cfg, &l);
    rp_st_file *f = NULL;
    ck_assert_int_eq(rp_st_synthetic(&l, 3, "te-tiny", &f, &err), RP_OK);
    rp_te *m = NULL;
    ck_assert_msg(rp_te_load(&cfg, f, &m, &err) == RP_OK, "%s", err.msg);

    enum { B = 4 };
    const char *prompts[B] = {"", "a cat", u8"naïve café", "a cat"};
    const size_t L = cfg.max_len, C = cfg.context_dim, P = cfg.pooled_dim;
    float *c1 = malloc(B * L * C * sizeof(float)), *c2 = malloc(B * L * C * sizeof(float));
    float *p1 = malloc(B * P * sizeof(float)), *p2 = malloc(B * P * sizeof(float));
    uint8_t mask[B * 32];
    ck_assert_uint_eq(L, 32);
    rp_ctx ctx = rp_ctx_default();
    ck_assert_int_eq(rp_te_encode(m, &ctx, prompts, B, c1, mask, p1, &err), RP_OK);
    ck_assert_int_eq(rp_te_encode(m, &ctx, prompts, B, c2, NULL, p2, &err), RP_OK);
    ck_assert_mem_eq(c1, c2, B * L * C * sizeof(float));
    ck_assert_mem_eq(p1, p2, B * P * sizeof(float));

    for (int b = 0; b < B; b++) {
        int32_t tok[32];
        uint8_t tm[32];
        rp_te_tokenize(prompts[b], (int)L, tok, tm);
        ck_assert_mem_eq(mask + b * L, tm, L);
        for (size_t i = 0; i < L; i++)
            for (size_t j = 0; j < C; j++) {
                const float v = c1[(b * L + i) * C + j];
                if (!tm[i]) ck_assert_msg(v == 0.0f, "prompt %d pad row %zu not zero", b, i);
                else ck_assert(isfinite(v));
            }
        for (size_t j = 0; j < P; j++) ck_assert(isfinite(p1[b * P + j]));
    }
    /* prompts 1 and 3 are the same prompt; 0, 1, 2 differ */
    ck_assert(memcmp(p1 + 0 * P, p1 + 1 * P, P * sizeof(float)) != 0);
    ck_assert(memcmp(p1 + 1 * P, p1 + 2 * P, P * sizeof(float)) != 0);
    /* the same prompt at two batch positions, and alone: bitwise equal (prompts run
     * through their own GEMMs, so batch composition cannot change a bit) */
    ck_assert_mem_eq(p1 + 1 * P, p1 + 3 * P, P * sizeof(float));
    ck_assert_mem_eq(c1 + 1 * L * C, c1 + 3 * L * C, L * C * sizeof(float));
    ck_assert_int_eq(rp_te_encode(m, &ctx, prompts + 3, 1, c2, NULL, p2, &err), RP_OK);
    ck_assert_mem_eq(p2, p1 + 1 * P, P * sizeof(float));
    ck_assert_mem_eq(c2, c1 + 1 * L * C, L * C * sizeof(float));

    ck_assert_int_eq(rp_te_encode(m, &ctx, prompts, 0, c1, mask, p1, &err), RP_ERR_INVALID);
    free(c1); free(c2); free(p1); free(p2);
    rp_te_free(m);
    rp_st_close(f);
    rp_params_free(&l);
}
END_TEST

int main(void) {
    Suite *su = suite_create("tokenizer");
    TCase *tc = tcase_create("tokenize");
    tcase_add_test(tc, test_ascii);
    tcase_add_test(tc, test_empty_is_unconditional);
    tcase_add_test(tc, test_multibyte_utf8);
    tcase_add_test(tc, test_truncation_keeps_eos);
    tcase_add_test(tc, test_truncation_splits_character);
    tcase_add_test(tc, test_padding_and_mask);
    suite_add_tcase(su, tc);
    TCase *te = tcase_create("encoder");
    tcase_add_test(te, test_presets);
    tcase_add_test(te, test_encode_contracts);
    suite_add_tcase(su, te);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    const int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
