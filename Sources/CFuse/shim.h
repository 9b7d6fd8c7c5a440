#ifndef CFUSE_SHIM_H
#define CFUSE_SHIM_H

// libfuse3's low-level API at the 3.14 level (Debian 12). Everything Swift cannot import directly —
// macros, variadic functions, anonymous-union fields — is wrapped here as a cfuse_* function.
#define FUSE_USE_VERSION 314

#include <fuse3/fuse_lowlevel.h>
#include <fuse3/fuse.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <errno.h>
#include <signal.h>
#include <poll.h>

/// fuse_session_new is a macro from 3.17 on; this names the function on every version.
static inline struct fuse_session *cfuse_session_new(struct fuse_args *args,
                                                     const struct fuse_lowlevel_ops *ops,
                                                     size_t op_size, void *userdata) {
    return fuse_session_new(args, ops, op_size, userdata);
}

/// fuse_file_info keeps its flags in bit-fields, which Swift cannot write.
static inline void cfuse_file_info_set_open_flags(struct fuse_file_info *fi, int direct_io, int keep_cache,
                                                  int nonseekable, int cache_readdir) {
    fi->direct_io = direct_io ? 1 : 0;
    fi->keep_cache = keep_cache ? 1 : 0;
    fi->nonseekable = nonseekable ? 1 : 0;
    fi->cache_readdir = cache_readdir ? 1 : 0;
}

/// A fuse_bufvec holding one buffer backed by a file descriptor, read at `pos`: the kernel can
/// splice from the cache file instead of copying through user space.
static inline struct fuse_bufvec cfuse_bufvec_fd(int fd, off_t pos, size_t size) {
    struct fuse_bufvec bufv = FUSE_BUFVEC_INIT(size);
    bufv.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    bufv.buf[0].fd = fd;
    bufv.buf[0].pos = pos;
    return bufv;
}

#endif
