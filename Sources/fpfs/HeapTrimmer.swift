import CMalloc
import FileProviderKit

#if canImport(Glibc)
    import Glibc
#endif

/// Gives the heap memory the daemon has freed back to the system while it runs (DECISIONS 81).
///
/// glibc keeps freed memory for reuse and returns only the top of a heap by itself. The daemon's
/// big allocations are short-lived (a folder's listing read for the kernel, a parsed PROPFIND)
/// and interleaved with long-lived small ones (SQLite's cache pages, the node table), so after a
/// burst most of what it touched stays resident though free: after `ls -lR` of 201 000 items,
/// 55 of the heap's 68 MiB were free chunks. So the daemon keeps one heap instead of one per
/// thread (up to eight per core), which lets whichever thread allocates next reuse what another
/// freed (each thread's small allocations still go through its own cache, and a cold 1 GiB read
/// measured no slower), and once a second, when the heap grew or its use moved by a mebibyte,
/// asks glibc to hand free pages back (`malloc_trim`, a few hundred `madvise` calls).
enum HeapTrimmer {
    /// Call before the daemon starts threads: heaps made before it stay.
    static func keepOneHeap() {
        _ = mallopt(M_ARENA_MAX, 1)
    }

    /// Trims after activity, once a second, until cancelled.
    static func run() async {
        var last: mallinfo2?
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            // Both calls hold the heap's lock while they walk its free chunks: off the cooperative
            // threads.
            let previous = last
            last = try? await BlockingIO.run { trimmed(since: previous) }
        }
    }

    /// The heap's figures after trimming it, when it grew or its use moved by 1 MiB since `last`
    /// (the figures of the last trim); else `last`, which the next check compares with again.
    private static func trimmed(since last: mallinfo2?) -> mallinfo2 {
        let now = mallinfo2()
        guard let last else { return now }
        let moved = now.uordblks > last.uordblks ? now.uordblks - last.uordblks : last.uordblks - now.uordblks
        guard now.arena > last.arena || moved >= 1 << 20 else { return last }
        _ = malloc_trim(0)
        return mallinfo2()
    }
}
