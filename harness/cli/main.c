/* main.c — `repro` entry point: dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "engine/error.h"
#include "engine/heap.h"
#include "harness/cli/commands.h"
#include "harness/sweep/env.h"

typedef struct command {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} command;

static const command COMMANDS[] = {
    {"generate", rp_cmd_generate, "sample latents with a model and decode them to a PNG"},
    {"weights", rp_cmd_weights, "write deterministic synthetic weights for a preset"},
    {"forward", rp_cmd_forward, "one model forward on seeded inputs, dumped for parity checks"},
    {"decode", rp_cmd_decode, "decode a latents file with the VAE to PNG"},
    {"env", rp_cmd_env, "print this machine's environment record (JSON)"},
    {"diff", rp_cmd_diff, "compare two images, latents files or result directories: every metric"},
    {"worker", rp_cmd_worker, "one rank of a multi-process job (under launch, mpirun, srun, torchrun)"},
    {"launch", rp_cmd_launch, "run N ranks of a worker job on this machine and report how they ended"},
    {"golden", rp_cmd_golden, "record a matrix's reference outputs as goldens; list a golden store"},
    {"classify", rp_cmd_classify, "classify a finished case against its reference: drift, approx, BUG, ..."},
    {"report", rp_cmd_report, "rebuild summary.json, report.html/.md, junit.xml and plots from stored results"},
    {"compare", rp_cmd_compare, "compare two stored runs case by case (e.g. two machines) and report"},
    {"history", rp_cmd_history, "runs and per-case metric trends from a --history SQLite database"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: repro <command> [options]   (repro <command> --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].help);
    fprintf(f, "\n  repro --matrix FILE [options]   run a sweep (repro --matrix FILE --help)\n"
               "  repro --help-matrix             the matrix file schema\n");
}

int main(int argc, char **argv) {
    rp_heap_keep_freed(); /* before any thread: every command runs the engine's layers */
    if (argc < 2) { usage(stderr); return 2; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("repro %s (%s)\n", REPRO_VERSION, rp_git_revision());
        return 0;
    }
    /* --matrix is an option of repro itself, and may follow other sweep options */
    if (!strncmp(argv[1], "--", 2))
        for (int i = 1; i < argc; i++)
            if (!strcmp(argv[i], "--matrix") || !strcmp(argv[i], "--help-matrix")) return rp_cmd_matrix(argc, argv);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "repro: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
