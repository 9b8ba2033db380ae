/* cmd_env.c — `repro env`: print the environment record that results carry. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/cli/args.h"
#include "harness/cli/commands.h"
#include "harness/sweep/env.h"

int rp_cmd_env(int argc, char **argv) {
    rp_args a;
    rp_args_init(&a, argc, argv);
    if (rp_arg_flag(&a, "help")) {
        printf("usage: repro env [--out env.json]\n  prints (or writes) the environment record stored with every result\n");
        return 0;
    }
    const char *out = rp_arg_str(&a, "out", NULL);
    rp_error err = {0};
    if (rp_args_finish(&a, &err)) { rp_report_error(&err); return 2; }
    if (out) return rp_env_write(out, NULL, &err) ? rp_report_error(&err) : 0;
    cJSON *env = rp_env_collect();
    char *text = cJSON_Print(env);
    puts(text);
    free(text);
    cJSON_Delete(env);
    return 0;
}
