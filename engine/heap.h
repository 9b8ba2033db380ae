/* heap.h — how the process's allocator treats the engine's buffers.
 *
 * A forward allocates and frees the same activation and GEMM-scratch sizes layer after
 * layer (ops allocate their own scratch: ops.h). glibc's default returns a freed top of
 * the heap to the system once it exceeds a trim threshold that follows the largest
 * buffer freed, so the next layer faults the same pages in again: a flux-tiny dp=8
 * 128 px bf16 case took 1.7 M page faults, about 40% of its CPU time in the kernel
 * (2-core Intel Xeon, perf stat). rp_heap_keep_freed keeps freed memory in the heap for
 * the next layer instead. It changes where buffers live, never a value. */
#ifndef REPRO_HEAP_H
#define REPRO_HEAP_H

/* Call once at process start, before threads exist (the allocator's parameters are
 * process state; no-op where the C library is not glibc). Buffers up to the allocator's
 * largest heap size (32 MiB on 64-bit glibc) are reused from the heap and the heap is
 * never trimmed; larger ones are still mapped per allocation and unmapped when freed, so
 * the heap holds at most the peak of the smaller buffers live at once. */
void rp_heap_keep_freed(void);

#endif
