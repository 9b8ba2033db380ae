/* test_cublas_load.c — engine/cuda/cublas_load.h, no GPU needed: a process linked like
 * `repro` (this one, through repro_core) starts without libcublas / libcublasLt mapped
 * (what spares every CPU worker their start-up), and loads them on the first call: the
 * forwarded functions then answer with the library's own version and status strings.
 * Skipped (77) in a build without CUDA. (The failure path, a library that cannot be
 * opened, names it in cublasGetStatusString; it needs a machine without the toolkit.) */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef REPRO_HAVE_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>

#include "engine/cuda/cublas_load.h"

/* 1 when /proc/self/maps maps a file whose name contains `lib` */
static int mapped(const char *lib) {
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, lib) != NULL;
    fclose(f);
    return found;
}

START_TEST(test_loaded_on_first_use) {
    /* the process started without them (no DT_NEEDED on them anywhere in its link) */
    ck_assert_int_eq(rp_cublas_loaded(), 0);
    ck_assert_int_eq(mapped("libcublasLt.so"), 0);
    ck_assert_int_eq(mapped("libcublas.so"), 0);

    rp_error err = {0};
    ck_assert_msg(rp_cublas_load(&err) == RP_OK, "%s", err.msg);
    ck_assert_int_eq(rp_cublas_loaded(), 1);
    ck_assert_int_eq(mapped("libcublasLt.so"), 1);
    ck_assert_int_eq(mapped("libcublas.so"), 1);
    ck_assert_msg(rp_cublas_load(&err) == RP_OK, "a second load is a no-op");

    /* the library's own answers: its major version is the headers' (the soname it was
       opened by), and a status string is its text, not the loader's */
    const size_t v = cublasLtGetVersion();
    ck_assert_msg(v / 10000 == CUBLAS_VER_MAJOR, "cublasLtGetVersion %zu, headers %d", v, CUBLAS_VER_MAJOR);
    const char *s = cublasGetStatusString(CUBLAS_STATUS_NOT_INITIALIZED);
    ck_assert_ptr_nonnull(s);
    ck_assert_ptr_null(strstr(s, "not loaded"));
    ck_assert_str_eq(cublasGetStatusName(CUBLAS_STATUS_ALLOC_FAILED), "CUBLAS_STATUS_ALLOC_FAILED");
}
END_TEST
#endif

int main(void) {
#ifndef REPRO_HAVE_CUDA
    puts("SKIP: built without CUDA");
    return 77;
#else
    Suite *s = suite_create("cublas_load");
    TCase *tc = tcase_create("load");
    tcase_add_test(tc, test_loaded_on_first_use);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK); /* the first-use state is the process's own */
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
#endif
}
