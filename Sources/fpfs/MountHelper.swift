import ArgumentParser
import Foundation

/// `mount.fpfs REMOTE MOUNTPOINT [-sfnv] [-N NAMESPACE] [-o OPTIONS]`: what mount(8) runs for
/// `mount -t fpfs` (and `-t fuse.fpfs`, as `mount.fuse.fpfs`) and for fstab lines of type fpfs.
///
/// Each `-o` option becomes an `fpfs mount` option: `cache_size=10G` is `--cache-size 10G`,
/// `read_only` or `ro` is `--read-only`, `allow_other` is `--allow-other`; kernel flags (nosuid,
/// noatime, …) go to `--mount-flags`. The options that are mount(8)'s own or systemd's (noauto,
/// _netdev, nofail, x-systemd.*, …) mean nothing to the mount itself and are dropped. `user=` is
/// one of them (mount(8) adds it for a user's mount), so the WebDAV login is `username=`.
enum MountHelper {
    /// The names mount(8) looks for.
    static let names: Set<String> = ["mount.fpfs", "mount.fuse.fpfs"]

    /// Options for mount(8), systemd or fstab's tools, not for the filesystem.
    static let ignored: Set<String> = [
        "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "_netdev", "nofail", "rw",
    ]

    private static let usage = "usage: mount.fpfs REMOTE MOUNTPOINT [-o OPTIONS]"

    /// Options that would break the helper: a daemon in the foreground keeps mount(8) waiting.
    static let refused: Set<String> = ["foreground", "ready_fd", "password_fd"]

    static func main(_ arguments: [String]) async {
        do {
            guard let invocation = try invocation(arguments) else { return }
            let command = try MountCommand.parse(invocation)
            try await command.run()
        } catch let failure as CommandFailure {
            MountCommand.exit(withError: CommandFailure.exit(failure.message))
        } catch let code as ExitCode {
            // mount(8)'s "mount failure"
            MountCommand.exit(withError: code.rawValue == 0 ? code : ExitCode(32))
        } catch {
            MountCommand.exit(withError: error)
        }
    }

    /// The `fpfs mount` arguments for mount(8)'s `SPEC DIR [-sfnv] [-N NS] [-o OPTS] [-t TYPE]`;
    /// nil for `-f` (mount(8)'s fake mount: nothing to do).
    static func invocation(_ arguments: [String]) throws -> [String]? {
        var positional: [String] = []
        var options: [String] = []
        var fake = false
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            switch argument {
            case "-o", "-t", "-N":
                guard index < arguments.count else { throw CommandFailure("\(argument) needs a value (\(usage))") }
                if argument == "-o" { options += split(arguments[index]) }
                index += 1
            case let flags where flags.hasPrefix("-") && flags.count > 1:
                let letters = flags.dropFirst()
                guard letters.allSatisfy("sfnvrw".contains) else {
                    throw CommandFailure(
                        "unknown argument '\(flags)' (\(usage))")
                }
                fake = fake || letters.contains("f")
                if letters.contains("r") { options.append("ro") }
            default:
                positional.append(argument)
            }
        }
        guard positional.count == 2 else {
            throw CommandFailure(usage)
        }
        if fake { return nil }
        return positional + (try translate(options))
    }

    /// mount(8)'s option string split at commas, except inside double quotes, which mount(8)
    /// keeps for a value that holds commas (`non_materializing="updatedb,tracker"`); the quotes go.
    static func split(_ text: String) -> [String] {
        var options: [String] = []
        var current = ""
        var quoted = false
        for character in text {
            switch character {
            case "\"": quoted.toggle()
            case "," where !quoted:
                options.append(current)
                current = ""
            default: current.append(character)
            }
        }
        options.append(current)
        return options.filter { !$0.isEmpty }
    }

    /// `-o` options as `fpfs mount` options.
    static func translate(_ options: [String]) throws -> [String] {
        var arguments: [String] = []
        var flags: [String] = []
        for option in options {
            let (name, value) =
                option.firstIndex(of: "=").map { (String(option[..<$0]), String(option[option.index(after: $0)...])) }
                ?? (option, nil)
            if ignored.contains(name) || name.hasPrefix("x-") || ["comment", "user", "helper"].contains(name) {
                continue
            }
            guard !refused.contains(name) else {
                throw CommandFailure("mount option '\(name)' cannot be used with mount(8)")
            }
            switch (name, value) {
            case ("ro", nil): arguments.append("--read-only")
            case ("username", let value?): arguments += ["--user", value]
            case (let flag, nil) where MountAccessOptions.knownMountFlags.contains(flag): flags.append(flag)
            case (_, nil): arguments.append("--" + name.replacingOccurrences(of: "_", with: "-"))
            case (_, let value?): arguments += ["--" + name.replacingOccurrences(of: "_", with: "-"), value]
            }
        }
        if !flags.isEmpty { arguments += ["--mount-flags", flags.joined(separator: ",")] }
        return arguments
    }
}
