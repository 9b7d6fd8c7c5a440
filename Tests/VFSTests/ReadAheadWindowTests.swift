import Testing

@testable import VFS

@Suite("ReadAheadWindow")
struct ReadAheadWindowTests {
    private let mebibyte: UInt64 = 1 << 20

    @Test("with small blocks, the window starts at the kernel's read size and outlives reads out of order")
    func reorderedKernelReadsKeepTheWindowGrowing() {
        var window = ReadAheadWindow(blockSize: 64 << 10, maximum: 64 * mebibyte)
        var sizes: [UInt64] = []
        for start: UInt64 in [0, 2, 1, 3, 5, 4, 6] {
            _ = window.record(start * mebibyte..<(start + 1) * mebibyte, size: 1 << 30)
            sizes.append(window.window)
        }
        #expect(sizes == (0..<7).map { mebibyte << $0 })
    }

    @Test("a read far from the last one resets the window")
    func aJumpResetsTheWindow() {
        var window = ReadAheadWindow(blockSize: 64 << 10, maximum: 64 * mebibyte)
        _ = window.record(0..<mebibyte, size: 1 << 30)
        _ = window.record(mebibyte..<2 * mebibyte, size: 1 << 30)
        let ahead = window.record(100 * mebibyte..<100 * mebibyte + 4096, size: 1 << 30)
        #expect(window.window == 0)
        #expect(ahead.isEmpty)
    }
}
