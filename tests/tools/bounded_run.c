/* bounded_run.c — run a command under a wall-clock and a memory bound (tests only).
 *
 *   bounded_run SECONDS MAX_MIB CMD [ARG ...]
 *
 * Runs CMD, kills its process group when it runs longer than SECONDS, and reads its peak
 * resident set (ru_maxrss of the waited child) when it ends. Prints one line to stderr:
 *   "bounded_run: <wall> s, <rss> MiB, <how it ended>: CMD"
 * Exit: CMD's own exit status when both bounds held (128 + signal when a signal ended it);
 * 124 when it ran past SECONDS; 125 when its peak RSS exceeded MAX_MIB; 126 when it
 * could not be started. The hostile-input tests use it to assert "a clear error in
 * bounded time and memory" without GNU time or Python. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bounded_run SECONDS MAX_MIB CMD [ARG ...]\n");
        return 126;
    }
    const double limit = atof(argv[1]);
    const double max_mib = atof(argv[2]);
    if (!(limit > 0) || !(max_mib > 0)) {
        fprintf(stderr, "bounded_run: SECONDS and MAX_MIB must be > 0\n");
        return 126;
    }
    const double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bounded_run: fork: %s\n", strerror(errno));
        return 126;
    }
    if (pid == 0) {
        setpgid(0, 0); /* its own group: a timeout kills the ranks it starts too */
        execvp(argv[3], argv + 3);
        fprintf(stderr, "bounded_run: cannot run %s: %s\n", argv[3], strerror(errno));
        _exit(126);
    }
    setpgid(pid, pid);
    int status = 0, timed_out = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) { /* poll every 10 ms: simple, and the bound is seconds */
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "bounded_run: wait4: %s\n", strerror(errno));
            return 126;
        }
        if (!timed_out && now_s() - t0 > limit) {
            timed_out = 1;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
        }
        usleep(10000);
    }
    const double wall = now_s() - t0;
    const double rss_mib = (double)ru.ru_maxrss / 1024.0; /* ru_maxrss is in KiB on Linux */
    char how[64];
    int rc;
    if (WIFEXITED(status)) {
        rc = WEXITSTATUS(status);
        snprintf(how, sizeof how, "exit %d", rc);
    } else {
        rc = 128 + WTERMSIG(status);
        snprintf(how, sizeof how, "signal %d", WTERMSIG(status));
    }
    fprintf(stderr, "bounded_run: %.2f s, %.0f MiB, %s: %s\n", wall, rss_mib, how, argv[3]);
    if (timed_out) {
        fprintf(stderr, "bounded_run: FAIL: ran past %.1f s\n", limit);
        return 124;
    }
    if (rss_mib > max_mib) {
        fprintf(stderr, "bounded_run: FAIL: peak RSS %.0f MiB > %.0f MiB\n", rss_mib, max_mib);
        return 125;
    }
    return rc;
}
