/* test_device.c — engine/device.h without a GPU:
 *   - the "host-check" device refuses what a GPU would: an op handed a host pointer gets
 *     an error naming the op and the argument; the host reading device memory faults;
 *   - every model family's whole generation (text encoder on the host, transformer,
 *     sampler loop, VAE decode) run with ctx.dev = host-check is bitwise the plain CPU
 *     run: noise, trajectory, latents and 8-bit images. Since the checking device makes
 *     device memory unreadable outside its ops, equality also proves the forwards move
 *     every activation through device ops, uploads and downloads — the wiring the CUDA
 *     device relies on, tested where there is no GPU.
 * The CUDA device itself is tested against the CPU in tests/gpu/ (label gpu). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/device.h"
#include "engine/pipeline/pipeline.h"
#include "tests/common/small_gen.h"

START_TEST(host_pointer_is_refused) {
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = rp_device_host_check_create();
    ck_assert_ptr_nonnull(ctx.dev);
    rp_error err;
    rp_error_clear(&err);
    float *y = rp_d_alloc(&ctx, 16, &err);
    ck_assert_ptr_nonnull(y);
    float host[16] = {0};
    rp_d_add(&ctx, y, host, 16); /* x is host memory */
    ck_assert_int_eq(rp_d_check(&ctx, &err), RP_ERR_INVALID);
    ck_assert_msg(strstr(err.msg, "add") && strstr(err.msg, "'x'") && strstr(err.msg, "not device memory"), "%s",
                  err.msg);
    /* sticky until checked, then clear: a later good op works */
    rp_d_upload(&ctx, y, host, 16);
    rp_d_add(&ctx, y, y, 16);
    ck_assert_int_eq(rp_d_check(&ctx, &err), RP_OK);
    rp_d_free(&ctx, y);
    rp_device_destroy(ctx.dev);
}
END_TEST

START_TEST(host_read_of_device_memory_faults) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        rp_ctx ctx = rp_ctx_default();
        ctx.dev = rp_device_host_check_create();
        float *y = rp_d_alloc(&ctx, 16, NULL);
        volatile float v = y[3]; /* what a forward must never do */
        (void)v;
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, "status %d: the read did not fault", status);
}
END_TEST

START_TEST(mirror_maps_inside_the_block) {
    rp_ctx ctx = rp_ctx_default();
    ctx.dev = rp_device_host_check_create();
    rp_error err;
    rp_error_clear(&err);
    float w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[4];
    ck_assert_int_eq(rp_d_mirror(&ctx, w, sizeof w, &err), RP_OK);
    ck_assert_ptr_ne(rp_d_map(&ctx, w + 2), w + 2);
    float *y = rp_d_alloc(&ctx, 4, &err);
    rp_d_copy(&ctx, y, w + 4, 4); /* a host weight pointer, read through the mirror */
    rp_d_download(&ctx, out, y, 4);
    ck_assert_int_eq(rp_d_check(&ctx, &err), RP_OK);
    ck_assert(out[0] == 5 && out[3] == 8);
    rp_d_free(&ctx, y);
    rp_d_unmirror_all(&ctx);
    ck_assert_ptr_eq(rp_d_map(&ctx, w + 2), w + 2);
    rp_device_destroy(ctx.dev);
}
END_TEST

START_TEST(device_string_selects_gpus) {
    ck_assert(rp_device_selects("cuda", 3, "NVIDIA L4"));
    ck_assert(rp_device_selects("cuda:H200", 0, "NVIDIA H200"));
    ck_assert(rp_device_selects("cuda:h200", 0, "NVIDIA H200")); /* ASCII case ignored */
    ck_assert(!rp_device_selects("cuda:A30", 0, "NVIDIA H200"));
    ck_assert(rp_device_selects("cuda:#1", 1, "NVIDIA H200"));
    ck_assert(!rp_device_selects("cuda:#1", 0, "NVIDIA H200"));
    ck_assert(!rp_device_selects("cpu", 0, "NVIDIA H200"));
    ck_assert(rp_device_name_is_cuda("cuda:#0") && rp_device_name_is_cuda("cuda") && !rp_device_name_is_cuda("cpu"));
}
END_TEST

/* tests/common/small_gen.h's generation of `model` with ctx.dev = dev. */
static void generate(const char *model, rp_device *dev, rp_gen_result *res) {
    rp_error err;
    rp_status st = small_generation(model, 4.0, dev, res, &err);
    ck_assert_msg(st == RP_OK, "%s on %s: %s", model, dev ? dev->name : "cpu", err.msg);
}

static void same_floats(const char *what, const char *model, const float *a, const float *b, size_t n) {
    ck_assert_msg(memcmp(a, b, n * sizeof(float)) == 0, "%s: %s differs between the CPU and host-check runs", model,
                  what);
}

static void check_family(const char *model) {
    rp_gen_result cpu, dev;
    generate(model, NULL, &cpu);
    rp_device *d = rp_device_host_check_create();
    generate(model, d, &dev);
    rp_device_destroy(d);
    const size_t n = (size_t)cpu.B * cpu.C * cpu.h * cpu.w;
    ck_assert_int_eq(cpu.B, dev.B);
    same_floats("noise", model, cpu.noise, dev.noise, n);
    same_floats("trajectory", model, cpu.trajectory, dev.trajectory, n * (size_t)(cpu.steps + 1));
    same_floats("latents", model, cpu.latents, dev.latents, n);
    ck_assert_ptr_nonnull(cpu.rgb);
    ck_assert_ptr_nonnull(dev.rgb);
    ck_assert_msg(memcmp(cpu.rgb, dev.rgb, (size_t)cpu.B * cpu.H * cpu.W * 3) == 0, "%s: images differ", model);
    rp_gen_result_free(&cpu);
    rp_gen_result_free(&dev);
}

START_TEST(dit_generation_bitwise) { check_family("dit-tiny"); }
END_TEST
START_TEST(sd3_generation_bitwise) { check_family("sd3-tiny"); }
END_TEST
START_TEST(flux_generation_bitwise) { check_family("flux-tiny"); }
END_TEST

int main(void) {
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("host-check");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, host_pointer_is_refused);
    tcase_add_test(tc, host_read_of_device_memory_faults);
    tcase_add_test(tc, mirror_maps_inside_the_block);
    tcase_add_test(tc, device_string_selects_gpus);
    tcase_add_test(tc, dit_generation_bitwise);
    tcase_add_test(tc, sd3_generation_bitwise);
    tcase_add_test(tc, flux_generation_bitwise);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
