import Foundation
import Testing

extension MountTests {
    /// The fault list over WebDAV, through the real mount and a misbehaving server: each
    /// fault reaches the tool as a clear errno within the remote bound, never as a hang, and no
    /// bad byte stays in the cache: once the server behaves, the same file reads back equal to its
    /// source. Other files and folders are served while a fault lasts.
    @Suite("WebDAV faults reach readers as errno")
    struct WebDAVFaultTests {
        /// `--remote-timeout` of these mounts, short so that a hang would show.
        static let remoteTimeout = 3
        /// How long a failing tool may take: the remote bound and the provider's retries (250 ms,
        /// then 1 s), with room for a loaded machine.
        static let bound = Duration.seconds(remoteTimeout + 7)
        /// A size that ends inside a block, so the last range request is a short one.
        static let fileSize = (3 << 20) + 12_345

        static let hostIsDown = "Host is down"
        static let ioError = "Input/output error"

        @Test(
            "GETs answering 500, a short body, half a body then silence or a wrong Content-Range fail with errno; healed, reads whole",
            arguments: [
                (FakeWebDAVServer.Rule.Fault.status500, "Host is down"), (.shortBody, "Host is down"),
                (.stall, "Host is down"), (.wrongRange, "Input/output error"),
            ])
        func faultyReads(fault: FakeWebDAVServer.Rule.Fault, message: String) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/faulty.bin", size: Self.fileSize, seed: 7)
            try scratch.writeRemote("fine.txt", "served while another file fails\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(fault, path: "/faulty.bin", method: "GET")])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }

            let cat = await Command(["cat", "--", mount.path("faulty.bin")], timeout: .seconds(120)).run()
            expectFailure(cat, message, "\(fault): cat", server)
            // dd from the last, short block, so the range checks see the file's end too.
            let tail = await Command(
                ["dd", "if=" + mount.path("faulty.bin"), "of=/dev/null", "bs=64K", "skip=48"], timeout: .seconds(120)
            ).run()
            expectFailure(tail, message, "\(fault): dd of the last block", server)
            #expect(
                try await mount.xattr("user.fpfs.state", of: "faulty.bin") != "local",
                "\(fault): the file is local after failed fetches")
            let fine = await Command(["cat", "--", mount.path("fine.txt")], timeout: .seconds(30)).run()
            #expect(fine.succeeded && fine.stdout == "served while another file fails\n", "\(fault): \(fine)")

            try server.setRules([])
            try await expectSameContents(mount, "faulty.bin", as: scratch.remote, "\(fault), healed")
            #expect(try await mount.xattr("user.fpfs.state", of: "faulty.bin") == "local")
        }

        @Test("a GET whose body breaks off once resumes with Range where it stopped; the read succeeds")
        func brokenOffReadResumes() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/flaky.bin", size: Self.fileSize, seed: 9)
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(.shortBody, path: "/flaky.bin", method: "GET", times: 2)])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }
            try await expectSameContents(mount, "flaky.bin", as: scratch.remote, "after two broken-off GETs")
            #expect(try await mount.xattr("user.fpfs.state", of: "flaky.bin") == "local")
        }

        @Test("bytes a read was given from a GET that then breaks off are fetched again, not kept by the kernel")
        func pagesOfAFailedFetchAreDropped() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/broken.bin", size: Self.fileSize, seed: 5)
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(.shortBody, path: "/broken.bin", method: "GET")])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }

            // Half of each body comes: the kernel's first reads are answered from it, then cat fails.
            let cat = await Command(["cat", "--", mount.path("broken.bin")], timeout: .seconds(120)).run()
            expectFailure(cat, Self.hostIsDown, "cat of half-sent bodies", server)
            try await waitUntilForgotten(mount, "broken.bin")

            try server.setRules([])
            try await expectSameContents(mount, "broken.bin", as: scratch.remote, "healed")
            #expect(try await mount.xattr("user.fpfs.state", of: "broken.bin") == "local")
        }

        @Test(
            "a folder whose PROPFIND is bad XML or lists an href outside it, with .. or with / in a name fails ls with EIO",
            arguments: [
                FakeWebDAVServer.Rule.Fault.badXML, .hrefOutside, .hrefDotDot, .hrefSlash,
            ])
        func faultyListings(fault: FakeWebDAVServer.Rule.Fault) async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try scratch.writeRemote("dir/a.txt", "a\n")
            try scratch.writeRemote("dir/b.txt", "b\n")
            try scratch.writeRemote("other/c.txt", "c\n")
            try scratch.writeRemote("top.txt", "top\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(fault, path: "/dav/dir/", method: "PROPFIND")])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }

            let listing = await Command(["ls", "-A", mount.path("dir")], timeout: .seconds(120)).run()
            expectFailure(listing, Self.ioError, "\(fault): ls dir", server)
            #expect(listing.lines.isEmpty, "\(fault): ls of a bad listing printed names: \(listing.lines)")
            for name in ["x", "passwd", "a", "a%2Fb"] {
                let stat = await Command(["stat", "--", mount.path("dir/" + name)], timeout: .seconds(120)).run()
                #expect(!stat.timedOut && stat.status != 0, "\(fault): dir/\(name) exists: \(stat)")
            }
            try await expectListing(mount, "", ["dir", "other", "top.txt"], "\(fault): the root")
            try await expectListing(mount, "other", ["c.txt"], "\(fault): another folder")

            try server.setRules([])
            try await expectListing(mount, "dir", ["a.txt", "b.txt"], "\(fault), healed")
            let found = try await Command(["find", ".", "-mindepth", "1"], in: mount.mountpoint).check()
            #expect(
                found.lines.sorted() == [
                    "./dir", "./dir/a.txt", "./dir/b.txt", "./other", "./other/c.txt", "./top.txt",
                ],
                "\(fault), healed: find shows \(found.lines)")
            let read = try await Command(["cat", "--", mount.path("dir/a.txt")]).check()
            #expect(read.stdout == "a\n")
        }

        @Test("a server stopped in the middle of a slow read fails cat with EHOSTDOWN; restarted, the file reads whole")
        func serverStoppedMidRead() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/slow.bin", size: 8 << 20, seed: 11)
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([.init(.slow, path: "/slow.bin", method: "GET", rate: 64)])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }

            async let reading = Command(["cat", "--", mount.path("slow.bin")], timeout: .seconds(120)).run()
            try await waitUntilFetching(mount)
            let stopped = ContinuousClock.now
            await server.stop()
            let cat = await reading
            let sinceStop = ContinuousClock.now - stopped
            expectFailure(cat, Self.hostIsDown, "cat with the server stopped", server)
            #expect(
                sinceStop < Self.bound, "cat ended \(sinceStop) after the server stopped, bound \(Self.bound)")
            #expect(try await mount.xattr("user.fpfs.state", of: "slow.bin") != "local")

            try server.setRules([])
            try await server.restart()
            try await expectSameContents(mount, "slow.bin", as: scratch.remote, "restarted")
            #expect(try await mount.xattr("user.fpfs.state", of: "slow.bin") == "local")
        }

        @Test("while one read crawls and other files and folders fail, the rest is served at once")
        func othersServedDuringFaults() async throws {
            let scratch = try Scratch()
            defer { scratch.remove() }
            try PatternFile.write(to: scratch.remote + "/slow.bin", size: 4 << 20, seed: 13)
            try scratch.writeRemote("error.bin", "never served\n")
            try scratch.writeRemote("broken/inside.txt", "never listed\n")
            try scratch.writeRemote("fine/ok.txt", "served\n")
            let server = try await FakeWebDAVServer.start(serving: scratch.remote, in: scratch)
            defer { server.stopBlocking() }
            try server.setRules([
                .init(.slow, path: "/slow.bin", method: "GET", rate: 8),
                .init(.status500, path: "/error.bin", method: "GET"),
                .init(.badXML, path: "/dav/broken/", method: "PROPFIND"),
            ])
            let mount = try await mountWebDAV(server, in: scratch)
            defer { mount.unmount() }

            async let crawling = Command(["cat", "--", mount.path("slow.bin")], timeout: .seconds(120)).run()
            try await waitUntilFetching(mount)
            let error = await Command(["cat", "--", mount.path("error.bin")], timeout: .seconds(120)).run()
            expectFailure(error, Self.hostIsDown, "cat of a file answering 500", server)
            let broken = await Command(["ls", mount.path("broken")], timeout: .seconds(120)).run()
            expectFailure(broken, Self.ioError, "ls of a folder answering bad XML", server)
            let fine = await Command(["cat", "--", mount.path("fine/ok.txt")], timeout: .seconds(120)).run()
            #expect(fine.succeeded && fine.stdout == "served\n", "beside the faults: \(fine)")
            #expect(fine.duration < Self.bound, "beside the faults, cat took \(fine.duration)")

            // The crawl ends the way a stopped server ends it.
            await server.stop()
            let crawl = await crawling
            expectFailure(crawl, Self.hostIsDown, "the crawling cat, server stopped", server)
        }

        // MARK: Helpers

        private func mountWebDAV(_ server: FakeWebDAVServer, in scratch: Scratch) async throws -> TestMount {
            try await TestMount.start(
                remote: server.url, in: scratch, options: ["--remote-timeout", String(Self.remoteTimeout)])
        }

        /// The tool ended on its own within the bound, failed, and said `message`.
        private func expectFailure(
            _ output: Command.Output, _ message: String, _ what: String, _ server: FakeWebDAVServer,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(!output.timedOut, "\(what) hung: \(output)", sourceLocation: sourceLocation)
            #expect(output.status != 0, "\(what) succeeded", sourceLocation: sourceLocation)
            #expect(
                output.stderr.contains(message), "\(what) should fail with \(message): \(output)\n\(server.log)",
                sourceLocation: sourceLocation)
            #expect(
                output.duration < Self.bound, "\(what) took \(output.duration), bound \(Self.bound)",
                sourceLocation: sourceLocation)
        }

        /// The file reads back through the mount with the same sha256 as its source.
        private func expectSameContents(
            _ mount: TestMount, _ relative: String, as source: String, _ what: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let read = try await Command(["sha256sum", "--", mount.path(relative)], timeout: .seconds(120)).check()
            let expected = try await Command(["sha256sum", "--", source + "/" + relative]).check()
            #expect(
                read.stdout.prefix(64) == expected.stdout.prefix(64), "\(what): \(relative) reads other bytes",
                sourceLocation: sourceLocation)
        }

        /// `ls -A` of the folder shows exactly `names`.
        private func expectListing(
            _ mount: TestMount, _ relative: String, _ names: [String], _ what: String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let listing = try await Command(["ls", "-A", mount.path(relative)], timeout: .seconds(120)).check()
            #expect(listing.lines == names, "\(what): ls shows \(listing.lines)", sourceLocation: sourceLocation)
        }

        /// Returns once the failed fetches of `relative` have ended and their bytes are forgotten.
        private func waitUntilForgotten(_ mount: TestMount, _ relative: String) async throws {
            let deadline = ContinuousClock.now + Self.bound
            while try await mount.xattr("user.fpfs.local_bytes", of: relative) != "0" {
                guard ContinuousClock.now < deadline else {
                    throw MountTestFailure("the bytes of failed fetches of \(relative) are still local")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
        }

        /// Returns once the mount has started a content fetch, so a test acts in the middle of one.
        private func waitUntilFetching(_ mount: TestMount) async throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while try await mount.status().fetches.bytes == 0 {
                guard ContinuousClock.now < deadline else { throw MountTestFailure("no fetch brought a byte in 30 s") }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
