import Testing

extension MountTests {
    /// Inode numbers belong to items, not to the order of lookups, and survive a remount with the
    /// same cache directory (tools such as `find`, `tar` and `git` rely on them).
    @Suite("Inode numbers are stable")
    struct InodeStabilityTests {
        @Test("the same paths have the same inode numbers across unmount and remount")
        func stableAcrossRemount() async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }

            let first = try await TestMount.start(remote: source, in: scratch)
            defer { first.unmount() }
            let before = try await Self.inodes(Self.findInodes(in: first.mountpoint))
            #expect(before.count > FixtureTree.manyCount)
            let numbers = before.map { $0.prefix { $0 != " " } }
            #expect(Set(numbers).count == numbers.count, "different paths share an inode number")
            #expect(!numbers.contains("0"), "an inode number is 0")
            first.unmount()

            let second = try await TestMount.start(remote: source, in: scratch)
            defer { second.unmount() }
            // Look the paths up in the opposite order first, so a numbering that merely follows
            // lookup order cannot pass.
            let paths = before.map { String($0.drop { $0 != " " }.dropFirst()) }
            let reversed = try await Self.inodes(
                Command(
                    ["stat", "--printf", "%i %n\\0", "--"] + paths.reversed(), in: second.mountpoint,
                    timeout: .seconds(120)))
            LineComparison.expectEqual(reversed, before, "inode numbers after remount, looked up in reverse order")
            let after = try await Self.inodes(Self.findInodes(in: second.mountpoint))
            LineComparison.expectEqual(after, before, "inode numbers after remount")
        }

        /// `find` printing `inode path\0` for everything below `root`.
        static func findInodes(in root: String) -> Command {
            Command(["find", ".", "-mindepth", "1", "-printf", "%i %p\\0"], in: root, timeout: .seconds(120))
        }

        /// Runs a tool that prints `inode path\0` records; returns them sorted bytewise.
        static func inodes(_ command: Command) async throws -> [String] {
            let output = try await command.check()
            return TreeListing.sortedBytewise(output.stdout.split(separator: "\0").map(String.init))
        }
    }
}
