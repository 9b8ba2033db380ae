/* bench/metrics — SSIM and PSNR of a 1024x1024 RGB pair on one thread: best-of-N
 * milliseconds, and the ratio to scikit-image's time measured in the same run
 * on the same PNGs (target: SSIM >= 25x faster, identical values).
 *
 *   build/bench/metrics [--repeat N] [--python PATH] [--size S]
 *
 * The pair is deterministic: smooth gradients with texture, and a copy with a
 * small perturbation plus a patch of larger change. Both are written as PNGs to
 * a temporary directory; PATH (default $REPRO_PYTHON, else /usr/bin/python3)
 * reads them and times skimage.metrics.structural_similarity (gaussian_weights,
 * sigma 1.5, use_sample_covariance False, data_range 255, channel_axis 2) and
 * peak_signal_noise_ratio, best of N as well, with OMP/OpenBLAS at one thread.
 * Without python or skimage the C timings alone are printed.
 * Exit 1 if the values disagree: |SSIM - skimage| > 1e-6, or PSNR beyond 3 ulp
 * (both take the MSE exactly; only log10 and the x10 may round differently). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/error.h"
#include "engine/image.h"
#include "harness/cli/args.h"
#include "harness/metrics/metrics.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* a, b (S, S, 3): gradients + texture; b = a + small noise, and a patch of
 * S/8 x S/8 pixels shifted by 40 levels (clamped). */
static void make_pair(int S, uint8_t *a, uint8_t *b) {
    uint32_t x = 12345;
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++)
            for (int c = 0; c < 3; c++) {
                x = x * 1664525u + 1013904223u;
                const double v = 128 + 60 * sin(0.013 * (i + 2 * c * j)) + 40 * cos(0.021 * j - 0.7 * c) +
                                 (double)(x >> 27) - 16; /* 5 random bits of texture */
                const int av = v < 0 ? 0 : v > 255 ? 255 : (int)v;
                int bv = av + (int)((x >> 20) % 7) - 3;
                if (i >= S / 2 && i < S / 2 + S / 8 && j >= S / 4 && j < S / 4 + S / 8) bv += 40;
                const size_t p = ((size_t)i * S + j) * 3 + c;
                a[p] = (uint8_t)av;
                b[p] = (uint8_t)(bv < 0 ? 0 : bv > 255 ? 255 : bv);
            }
}

static const char *PY_SCRIPT =
    "import sys, time\n"
    "try:\n"
    "    import numpy as np\n"
    "    from skimage.metrics import structural_similarity, peak_signal_noise_ratio\n"
    "    from skimage.io import imread\n"
    "except ImportError as e:\n"
    "    print('skip', str(e).replace(' ', '_')); sys.exit(77)\n"
    "a, b, n = imread(sys.argv[1])[..., :3], imread(sys.argv[2])[..., :3], int(sys.argv[3])\n"
    "ts, tp = 1e30, 1e30\n"
    "for _ in range(n):\n"
    "    t = time.perf_counter()\n"
    "    s = structural_similarity(a, b, gaussian_weights=True, sigma=1.5, use_sample_covariance=False,\n"
    "                              data_range=255, channel_axis=2)\n"
    "    ts = min(ts, time.perf_counter() - t)\n"
    "    t = time.perf_counter()\n"
    "    p = peak_signal_noise_ratio(a, b, data_range=255)\n"
    "    tp = min(tp, time.perf_counter() - t)\n"
    "print('ssim %.17g' % s)\n"
    "print('psnr %.17g' % p)\n"
    "print('ssim_ms %.6f' % (ts * 1e3))\n"
    "print('psnr_ms %.6f' % (tp * 1e3))\n";

typedef struct sk_result {
    int ok;
    double ssim, psnr, ssim_ms, psnr_ms;
    char why[256];
} sk_result;

/* Runs python with PY_SCRIPT on the two PNGs; fills r (r->ok = 0 and r->why on failure). */
static void run_skimage(const char *python, const char *dir, const char *pa, const char *pb, int repeat,
                        sk_result *r) {
    memset(r, 0, sizeof *r);
    char script[4096], cmd[8192];
    snprintf(script, sizeof script, "%s/sk.py", dir);
    FILE *f = fopen(script, "w");
    if (!f || fputs(PY_SCRIPT, f) < 0) {
        snprintf(r->why, sizeof r->why, "cannot write the python script in %.200s", dir);
        if (f) fclose(f);
        return;
    }
    fclose(f);
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 '%s' '%s' '%s' '%s' %d 2>&1",
             python, script, pa, pb, repeat);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(r->why, sizeof r->why, "cannot run %s", python);
        return;
    }
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        char key[64], why[200];
        double v;
        if (sscanf(line, "skip %199s", why) == 1) snprintf(r->why, sizeof r->why, "skimage unavailable: %s", why);
        else if (sscanf(line, "%63s %lf", key, &v) == 2) {
            if (!strcmp(key, "ssim")) r->ssim = v, got |= 1;
            else if (!strcmp(key, "psnr")) r->psnr = v, got |= 2;
            else if (!strcmp(key, "ssim_ms")) r->ssim_ms = v, got |= 4;
            else if (!strcmp(key, "psnr_ms")) r->psnr_ms = v, got |= 8;
        }
    }
    const int rc = pclose(p);
    r->ok = got == 15 && rc == 0;
    if (!r->ok && !r->why[0]) snprintf(r->why, sizeof r->why, "%s failed (status %d)", python, rc);
}

int main(int argc, char **argv) {
    rp_args args;
    rp_args_init(&args, argc, argv);
    if (rp_arg_flag(&args, "help")) {
        printf("usage: %s [--repeat N] [--python PATH] [--size S]\n", argv[0]);
        return 0;
    }
    const int repeat = (int)rp_arg_int(&args, "repeat", 10);
    const char *env_py = getenv("REPRO_PYTHON");
    const char *python = rp_arg_str(&args, "python", env_py && *env_py ? env_py : "/usr/bin/python3");
    const int S = (int)rp_arg_int(&args, "size", 1024);
    rp_error err = {0};
    if (rp_args_finish(&args, &err) != RP_OK || repeat < 1 || S < 11 || S > 8192) {
        fprintf(stderr, "bench/metrics: %s\n", err.msg[0] ? err.msg : "need --repeat >= 1 and 11 <= --size <= 8192");
        return 2;
    }

    const size_t n = (size_t)S * S * 3;
    uint8_t *a = malloc(n), *b = malloc(n); /* (S, S, 3) each */
    if (!a || !b) { fprintf(stderr, "bench/metrics: out of memory\n"); return 1; }
    make_pair(S, a, b);

    char dir[] = "/tmp/repro-bench-metrics.XXXXXX", pa[512], pb[512];
    if (!mkdtemp(dir)) { perror("bench/metrics: mkdtemp"); return 1; }
    snprintf(pa, sizeof pa, "%s/a.png", dir);
    snprintf(pb, sizeof pb, "%s/b.png", dir);
    if (rp_png_write(pa, a, S, S, &err) != RP_OK || rp_png_write(pb, b, S, S, &err) != RP_OK) {
        fprintf(stderr, "bench/metrics: %s\n", err.msg);
        return 1;
    }

    /* C: best of N, one thread (metrics.c has no threading) */
    double ssim = 0, psnr = 0, t_ssim = 1e30, t_psnr = 1e30;
    for (int r = 0; r < repeat + 1; r++) { /* + 1: the first run warms caches and page tables */
        double t0 = now();
        if (rp_ssim_u8(a, b, S, S, 3, &ssim, NULL, &err) != RP_OK) { fprintf(stderr, "%s\n", err.msg); return 1; }
        const double t1 = now();
        psnr = rp_psnr_u8(a, b, n);
        const double t2 = now();
        if (r) {
            t_ssim = fmin(t_ssim, t1 - t0);
            t_psnr = fmin(t_psnr, t2 - t1);
        }
    }
    printf("bench/metrics: %dx%d RGB pair, one thread, best of %d\n", S, S, repeat);
    printf("  C        ssim %.17g  %8.2f ms   psnr %.17g  %7.3f ms\n", ssim, t_ssim * 1e3, psnr, t_psnr * 1e3);

    sk_result sk;
    run_skimage(python, dir, pa, pb, repeat, &sk);
    int rc = 0;
    if (!sk.ok) {
        printf("  skimage  not timed: %s\n", sk.why);
    } else {
        const double dssim = fabs(ssim - sk.ssim), dpsnr = fabs(psnr - sk.psnr);
        const int ok_s = dssim <= 1e-6, ok_p = dpsnr <= 3 * (nextafter(fabs(sk.psnr), INFINITY) - fabs(sk.psnr));
        printf("  skimage  ssim %.17g  %8.2f ms   psnr %.17g  %7.3f ms\n", sk.ssim, sk.ssim_ms, sk.psnr,
               sk.psnr_ms);
        printf("  ratio    ssim %.1fx (target >= 25x: %s)   psnr %.1fx\n", sk.ssim_ms / (t_ssim * 1e3),
               sk.ssim_ms / (t_ssim * 1e3) >= 25 ? "met" : "NOT met", sk.psnr_ms / (t_psnr * 1e3));
        printf("  values   |ssim - skimage| %.3g (bar 1e-6): %s   |psnr - skimage| %.3g (bar 3 ulp): %s\n", dssim,
               ok_s ? "ok" : "FAIL", dpsnr, ok_p ? "ok" : "FAIL");
        rc = ok_s && ok_p ? 0 : 1;
    }
    char script[600];
    snprintf(script, sizeof script, "%s/sk.py", dir);
    unlink(script);
    unlink(pa);
    unlink(pb);
    rmdir(dir);
    free(a);
    free(b);
    return rc;
}
