/* test_synthetic.c — in-memory synthetic weights are bitwise the ones written to disk. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/models/registry.h"
#include "engine/synthetic.h"

START_TEST(memory_equals_file) {
    const char *models[] = {"dit-tiny", "vae-tiny"};
    for (int m = 0; m < 2; m++) {
        rp_param_list l = {0};
        rp_error err = {0};
        ck_assert_int_eq(rp_model_param_specs(models[m], 0, &l, &err), RP_OK);
        char path[256];
        snprintf(path, sizeof path, "/tmp/repro-test-synth-%d-%d.safetensors", (int)getpid(), m);
        ck_assert_int_eq(rp_params_write_synthetic(&l, models[m], 5, path, &err), RP_OK);
        rp_st_file *disk = NULL, *mem = NULL;
        ck_assert_int_eq(rp_st_open(path, &disk, &err), RP_OK);
        ck_assert_int_eq(rp_st_synthetic(&l, 5, "mem", &mem, &err), RP_OK);
        ck_assert_int_eq(disk->n, mem->n);
        for (int i = 0; i < l.n; i++) {
            const rp_st_tensor *a = rp_st_find(disk, l.specs[i].name);
            const rp_st_tensor *b = rp_st_find(mem, l.specs[i].name);
            ck_assert_ptr_nonnull(a);
            ck_assert_ptr_nonnull(b);
            ck_assert_int_eq(a->nbytes, b->nbytes);
            ck_assert_msg(memcmp(a->data, b->data, a->nbytes) == 0, "%s differs", l.specs[i].name);
        }
        /* reading through the normal path works on the in-memory file */
        size_t n0 = rp_param_numel(&l.specs[0]);
        float *buf = malloc(n0 * sizeof(float));
        ck_assert_int_eq(rp_st_read_f32(mem, l.specs[0].name, l.specs[0].ndim, l.specs[0].shape, buf, &err), RP_OK);
        free(buf);
        rp_st_close(disk);
        rp_st_close(mem);
        rp_params_free(&l);
        unlink(path);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("synthetic");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, memory_equals_file);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
