/* heap.c — rp_heap_keep_freed (heap.h). */
#include "heap.h"

#include <stdlib.h> /* defines __GLIBC__ under glibc: test it only after a libc header */

#ifdef __GLIBC__
#include <malloc.h>
#endif

void rp_heap_keep_freed(void) {
#ifdef __GLIBC__
    /* A fixed mmap threshold turns off glibc's sliding one (which re-derives the trim
     * threshold from each freed mapping); 32 MiB is the largest it accepts on 64-bit. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    /* M_TRIM_THRESHOLD is an int: its largest value means "never give the top back" */
    mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
#endif
}
