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
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>

/// fuse_session_new is a macro from 3.17 on; this names the function on every version.
static inline struct fuse_session *cfuse_session_new(struct fuse_args *args,
                                                     const struct fuse_lowlevel_ops *ops,
                                                     size_t op_size, void *userdata) {
    return fuse_session_new(args, ops, op_size, userdata);
}

/// fuse_file_info keeps its flags in bit-fields, which Swift cannot write.
static inline void cfuse_file_info_set_open_flags(struct fuse_file_info *fi, int direct_io, int keep_cache,
                                                  int nonseekable, int cache_readdir, int noflush) {
    fi->direct_io = direct_io ? 1 : 0;
    fi->keep_cache = keep_cache ? 1 : 0;
    fi->nonseekable = nonseekable ? 1 : 0;
    fi->cache_readdir = cache_readdir ? 1 : 0;
    fi->noflush = noflush ? 1 : 0;
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

// FUSE passthrough (kernel 6.9 and later): the kernel reads and writes an open file's backing file
// itself, without a request per read. libfuse 3.14 knows nothing of it, so the pieces of the
// kernel's protocol it needs are spelled out here (linux/fuse.h, protocol 7.40).

/// FUSE_PASSTHROUGH's bit in the INIT flags' upper word (flags2); the whole flag is 1 << 37.
#define CFUSE_PASSTHROUGH_FLAGS2_BIT (1u << 5)
/// FUSE_DIRECT_IO_ALLOW_MMAP's bit in flags2 (1 << 36, kernel 6.6 and later): handles opened
/// with direct I/O may be mapped shared.
#define CFUSE_DIRECT_IO_ALLOW_MMAP_FLAGS2_BIT (1u << 4)
/// FUSE_INIT_EXT: the INIT messages carry flags2.
#define CFUSE_INIT_EXT (1u << 30)
/// FOPEN_DIRECT_IO and FOPEN_PASSTHROUGH in an open reply.
#define CFUSE_FOPEN_DIRECT_IO (1u << 0)
#define CFUSE_FOPEN_PASSTHROUGH (1u << 7)

/// The start of the kernel's FUSE_INIT request after its 40-byte header (fuse_init_in).
struct cfuse_init_in {
    uint32_t major;
    uint32_t minor;
    uint32_t max_readahead;
    uint32_t flags;
    uint32_t flags2;
};

/// The reply to FUSE_INIT after its 16-byte header (fuse_init_out).
struct cfuse_init_out {
    uint32_t major;
    uint32_t minor;
    uint32_t max_readahead;
    uint32_t flags;
    uint16_t max_background;
    uint16_t congestion_threshold;
    uint32_t max_write;
    uint32_t time_gran;
    uint16_t max_pages;
    uint16_t map_alignment;
    uint32_t flags2;
    uint32_t max_stack_depth;
    uint16_t request_timeout;
    uint16_t unused[11];
};

/// fuse_open_out with the field 3.14 calls padding under its real name.
struct cfuse_open_out {
    uint64_t fh;
    uint32_t open_flags;
    int32_t backing_id;
};

struct cfuse_backing_map {
    int32_t fd;
    uint32_t flags;
    uint64_t padding;
};

/// Registers `fd` as a backing file with the FUSE device `device`: the id, or -1 and errno.
static inline int cfuse_backing_open(int device, int fd) {
    struct cfuse_backing_map map;
    memset(&map, 0, sizeof map);
    map.fd = fd;
    return ioctl(device, _IOW(229, 1, struct cfuse_backing_map), &map);
}

/// Forgets a backing file id; open files that use it keep their backing file.
static inline int cfuse_backing_close(int device, uint32_t backing_id) {
    return ioctl(device, _IOW(229, 2, uint32_t), &backing_id);
}

/// fuse_attr and fuse_entry_out of the kernel's protocol, for the create reply built below.
struct cfuse_attr {
    uint64_t ino, size, blocks, atime, mtime, ctime;
    uint32_t atimensec, mtimensec, ctimensec, mode, nlink, uid, gid, rdev, blksize, flags;
};

struct cfuse_entry_out {
    uint64_t nodeid, generation, entry_valid, attr_valid;
    uint32_t entry_valid_nsec, attr_valid_nsec;
    struct cfuse_attr attr;
};

/// Splits a timeout in seconds as the kernel takes it (whole seconds, nanoseconds).
static inline void cfuse_timeout(double seconds, uint64_t *whole, uint32_t *nanoseconds) {
    if (seconds < 0) seconds = 0;
    *whole = (uint64_t)seconds;
    *nanoseconds = (uint32_t)((seconds - (double)*whole) * 1.0e9);
}

/// fuse_reply_create with FOPEN_PASSTHROUGH and a backing id: the entry as libfuse's
/// fuse_reply_create fills it, then the open reply of cfuse_reply_open_passthrough.
static inline int cfuse_reply_create_passthrough(fuse_req_t req, const struct fuse_entry_param *e,
                                                 const struct fuse_file_info *fi, int32_t backing_id) {
    struct {
        struct cfuse_entry_out entry;
        struct cfuse_open_out open;
    } out;
    memset(&out, 0, sizeof out);
    out.entry.nodeid = e->ino;
    out.entry.generation = e->generation;
    cfuse_timeout(e->entry_timeout, &out.entry.entry_valid, &out.entry.entry_valid_nsec);
    cfuse_timeout(e->attr_timeout, &out.entry.attr_valid, &out.entry.attr_valid_nsec);
    const struct stat *st = &e->attr;
    out.entry.attr.ino = st->st_ino;
    out.entry.attr.mode = st->st_mode;
    out.entry.attr.nlink = st->st_nlink;
    out.entry.attr.uid = st->st_uid;
    out.entry.attr.gid = st->st_gid;
    out.entry.attr.rdev = st->st_rdev;
    out.entry.attr.size = st->st_size;
    out.entry.attr.blksize = st->st_blksize;
    out.entry.attr.blocks = st->st_blocks;
    out.entry.attr.atime = st->st_atim.tv_sec;
    out.entry.attr.mtime = st->st_mtim.tv_sec;
    out.entry.attr.ctime = st->st_ctim.tv_sec;
    out.entry.attr.atimensec = st->st_atim.tv_nsec;
    out.entry.attr.mtimensec = st->st_mtim.tv_nsec;
    out.entry.attr.ctimensec = st->st_ctim.tv_nsec;
    out.open.fh = fi->fh;
    out.open.open_flags = CFUSE_FOPEN_PASSTHROUGH;
    out.open.backing_id = backing_id;
    return fuse_reply_buf(req, (const char *)&out, sizeof out);
}

/// fuse_reply_open with FOPEN_PASSTHROUGH and a backing id, and FOPEN_DIRECT_IO when `direct_io`
/// (reads and writes still come to the daemon; only mmap uses the backing file).
static inline int cfuse_reply_open_passthrough(fuse_req_t req, const struct fuse_file_info *fi, int32_t backing_id,
                                               int direct_io) {
    struct cfuse_open_out out;
    memset(&out, 0, sizeof out);
    out.fh = fi->fh;
    out.open_flags = CFUSE_FOPEN_PASSTHROUGH | (direct_io ? CFUSE_FOPEN_DIRECT_IO : 0);
    out.backing_id = backing_id;
    return fuse_reply_buf(req, (const char *)&out, sizeof out);
}

#endif
