import CFuse
import Foundation
import FuseKit
import Testing

/// DirectoryBuffer decides which entries fit; libfuse writes them. If the two disagreed about an
/// entry's size, a readdirplus answer would drop entries the filesystem had counted as lookups.
@Suite struct DirectoryBufferTests {
    @Test(arguments: [false, true])
    func entrySizeMatchesLibfuse(isPlus: Bool) {
        for length in 1...300 {
            let name = String(repeating: "a", count: length)
            var stat = stat()
            var parameters = fuse_entry_param()
            let libfuse =
                isPlus
                ? fuse_add_direntry_plus(nil, nil, 0, name, &parameters, 0)
                : fuse_add_direntry(nil, nil, 0, name, &stat, 0)
            #expect(DirectoryBuffer.entrySize(nameLength: length, isPlus: isPlus) == libfuse, "name length \(length)")
        }
    }

    @Test func acceptsOnlyWhatFits() {
        let entry = Entry.negative(timeout: .zero)
        var buffer = DirectoryBuffer(capacity: 4096, isPlus: true)
        var accepted = 0
        while buffer.append(name: Array("file-0000".utf8), entry: entry, nextOffset: UInt64(accepted + 1)) {
            accepted += 1
        }
        #expect(accepted == 4096 / DirectoryBuffer.entrySize(nameLength: 9, isPlus: true))
        #expect(buffer.items.count == accepted)
        #expect(buffer.usedBytes <= 4096)
    }
}
