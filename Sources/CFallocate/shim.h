#ifndef CFALLOCATE_SHIM_H
#define CFALLOCATE_SHIM_H

// Linux's fallocate and its modes, and syncfs, which Swift's Glibc module hides behind _GNU_SOURCE.
#include <sys/types.h>
#include <linux/falloc.h>

int fallocate(int fd, int mode, off_t offset, off_t len);
int syncfs(int fd);

#endif
