import CMalloc
import FileProviderKit
import VFS

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
/// measured no slower), and once a second, when the heap grew, its use moved by a mebibyte or the
/// resident size grew by one, asks glibc to hand free pages back (`malloc_trim`, a few hundred
/// `madvise` calls). While checks find nothing to do the pause between them doubles, up to
/// `longestPause`: an idle daemon then wakes for it every 16 s, not three times a second
/// (DECISIONS 128). Work known to free much at its end (a change round) wakes it at once
/// (`workEnded`, DECISIONS 135).
enum HeapTrimmer {
    /// Call before the daemon starts threads: heaps made before it stay.
    static func keepOneHeap() {
        _ = mallopt(M_ARENA_MAX, 1)
    }

    /// What the trimmer compares from one check to the next.
    private struct Figures {
        var heap: mallinfo2
        /// The daemon's resident bytes.
        var resident: Int
    }

    /// The pause after a check that trimmed.
    private static let shortestPause: Duration = .seconds(1)
    /// The longest pause, reached after checks that found nothing to do.
    private static let longestPause: Duration = .seconds(16)

    /// The pause before the next check: the shortest after a trim, else twice `pause`, at most
    /// the longest.
    private static func pause(after pause: Duration, trimmed: Bool) -> Duration {
        trimmed ? shortestPause : min(pause * 2, longestPause)
    }

    /// Ends a pause early.
    private static let wake = WakeSignal()

    /// Tells the trimmer that work which freed much has ended: it checks now, not at the end of
    /// a pause that may have grown to `longestPause` while the work ran.
    static func workEnded() { wake.signal() }

    /// Trims after activity until cancelled.
    static func run() async {
        var last: Figures?
        var pause = shortestPause
        while !Task.isCancelled {
            await wake.wait(timeout: pause)
            if Task.isCancelled { return }
            // Both calls hold the heap's lock while they walk its free chunks: off the cooperative
            // threads.
            let previous = last
            let checked = try? await BlockingIO.run { check(since: previous) }
            last = checked?.figures
            pause = Self.pause(after: pause, trimmed: checked?.trimmed ?? false)
        }
    }

    /// Trims the heap when since `last` (the figures of the last trim) the heap grew, its use moved
    /// by 1 MiB, or the daemon's resident size grew by 1 MiB, and returns the figures after it;
    /// else returns `last` (with the least resident size seen), which the next check compares with
    /// again. The resident size catches work that reused free memory and freed it again between
    /// two checks, leaving the heap's figures where they were and its pages resident (a change
    /// round's walk).
    private static func check(since last: Figures?) -> (figures: Figures, trimmed: Bool) {
        let now = Figures(heap: mallinfo2(), resident: residentBytes())
        guard var last else { return (now, false) }
        let moved =
            now.heap.uordblks > last.heap.uordblks
            ? now.heap.uordblks - last.heap.uordblks : last.heap.uordblks - now.heap.uordblks
        guard now.heap.arena > last.heap.arena || moved >= 1 << 20 || now.resident >= last.resident + (1 << 20) else {
            last.resident = min(last.resident, now.resident)
            return (last, false)
        }
        _ = malloc_trim(0)
        return (Figures(heap: mallinfo2(), resident: residentBytes()), true)
    }

    /// The daemon's resident bytes, from /proc/self/statm (0 when it cannot be read).
    private static func residentBytes() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        // "size resident shared text lib data dt", in pages.
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}
