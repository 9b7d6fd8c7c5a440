#ifndef CSPAWN_SHIM_H
#define CSPAWN_SHIM_H

// glibc's spawn extensions that Swift's Glibc module hides behind _GNU_SOURCE.
#include <spawn.h>

/// Closes every descriptor from `from` up in the child (glibc 2.34 and later).
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

#endif
