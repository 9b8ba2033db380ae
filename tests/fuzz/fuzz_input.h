/* fuzz_input.h — the fuzz targets' one helper: an input as a file path.
 *
 * The safetensors, PNG and trace readers take a path (they check it names a regular
 * file), so each input goes into a memfd, which is one, and is named by
 * /proc/self/fd/N: no disk writes, nothing left behind. */
#ifndef REPRO_FUZZ_INPUT_H
#define REPRO_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes data into a new memfd and its path into path; returns the fd (close it after),
 * or -1 (the input is then skipped). */
static int fuzz_input_file(const uint8_t *data, size_t size, char *path, size_t cap) {
    int fd = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
