/* error.h — status codes and an explicit error record passed up the stack.
 *
 * Contract: a function that can fail for reasons outside the program (bad file,
 * bad config, I/O, allocation) returns rp_status and, when `err` is not NULL,
 * fills it with a user-facing message plus the source location that raised it
 * (nccl-tests style "file:line"). Library code never calls exit(). Invariants
 * that only a programming error can break are assert()s instead. */
#ifndef REPRO_ERROR_H
#define REPRO_ERROR_H

#ifdef __cplusplus
extern "C" { /* also included by the CUDA sources (engine/cuda/, compiled as C++) */
#endif

typedef enum rp_status {
    RP_OK = 0,
    RP_ERR_INVALID,     /* bad argument or config value */
    RP_ERR_IO,          /* open/read/write/rename failed */
    RP_ERR_FORMAT,      /* a file's content breaks its format */
    RP_ERR_SHAPE,       /* tensor shape or dtype not what the model needs */
    RP_ERR_NOT_FOUND,   /* a named thing (tensor, preset, key) is missing */
    RP_ERR_NOMEM,       /* allocation failed */
    RP_ERR_UNSUPPORTED, /* valid request this build cannot do */
    RP_ERR_COMM,        /* collective/communication failure */
    RP_ERR_TIMEOUT      /* something did not answer in time */
} rp_status;

typedef struct rp_error {
    rp_status code;
    char where[96];   /* "engine/safetensors.c:123" — for developers */
    char msg[1024];   /* for users: names the file, field and rule broken */
} rp_error;

/* Records code + printf-style message into err (if non-NULL); returns code. */
rp_status rp_error_set(rp_error *err, rp_status code, const char *file, int line,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define RP_FAIL(err, code, ...) rp_error_set((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Propagate a non-OK status unchanged (the callee already filled err). */
#define RP_TRY(expr) do { rp_status rp_try_s_ = (expr); if (rp_try_s_ != RP_OK) return rp_try_s_; } while (0)

const char *rp_status_name(rp_status s);

/* Clears err to RP_OK with empty message. */
void rp_error_clear(rp_error *err);

/* Prints "repro: error: <msg>  [where]" to stderr for a failed status (every command, a
 * rank's worker, the tools); returns 1, the exit code of a failed command. */
int rp_report_error(const rp_error *err);

#ifdef __cplusplus
}
#endif

#endif
