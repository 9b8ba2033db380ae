/* test_fsutil.c — atomic writers refuse to rename over non-regular files. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/fsutil.h"
#include "engine/image.h"
#include "engine/safetensors.h"

START_TEST(refuses_devices_and_dirs) {
    rp_error err = {0};
    ck_assert_int_eq(rp_atomic_target_ok("/dev/null", &err), RP_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err.msg, "/dev/null"));
    ck_assert_int_eq(rp_atomic_target_ok("/tmp", &err), RP_ERR_IO);
    ck_assert_int_eq(rp_atomic_target_ok("/tmp/repro-test-does-not-exist-xyz", &err), RP_OK);

    /* the writers use it: /dev/null stays a character device */
    rp_st_writer *w = rp_st_writer_new();
    float v = 1.0f;
    int64_t shape[1] = {1};
    ck_assert_int_eq(rp_st_writer_add(w, "a", RP_DT_F32, 1, shape, &v, &err), RP_OK);
    ck_assert_int_eq(rp_st_writer_write(w, "/dev/null", &err), RP_ERR_IO);
    rp_st_writer_free(w);
    unsigned char px[3] = {1, 2, 3};
    ck_assert_int_eq(rp_png_write("/dev/null", px, 1, 1, &err), RP_ERR_IO);
    struct stat st;
    ck_assert_int_eq(stat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(regular_file_is_replaced) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/repro-test-fsutil-%d.png", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs("old", f);
    fclose(f);
    rp_error err = {0};
    unsigned char px[3] = {1, 2, 3};
    ck_assert_int_eq(rp_png_write(path, px, 1, 1, &err), RP_OK);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(st.st_size > 3);
    unlink(path);
}
END_TEST

int main(void) {
    Suite *s = suite_create("fsutil");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, refuses_devices_and_dirs);
    tcase_add_test(tc, regular_file_is_replaced);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
