import Testing

extension MountTests {
    /// The mount shows the source folder exactly: names, types, sizes, modes, mtimes, link targets
    /// and contents, for a tree built to trip filesystems up (FixtureTree).
    @Suite("The mount equals its source")
    struct TreeParityTests {
        @Test("the same view over the mount and over the source", arguments: TreeListing.allCases)
        func sameAsSource(_ listing: TreeListing) async throws {
            let source = try await FixtureTree.path()
            let scratch = try Scratch()
            defer { scratch.remove() }
            let mount = try await TestMount.start(remote: source, in: scratch)
            defer { mount.unmount() }

            let expected = try await listing.lines(of: source)
            let actual = try await listing.lines(of: mount.mountpoint)
            #expect(expected.count > FixtureTree.manyCount, "the fixture listing looks too short: \(expected.count)")
            LineComparison.expectEqual(actual, expected, "\(listing)")
        }
    }
}
