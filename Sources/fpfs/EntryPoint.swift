import Foundation

/// The program's start: `fpfs …`, or the mount(8) helper when run as `mount.fpfs` or
/// `mount.fuse.fpfs` (one binary, linked under those names by scripts/install.sh).
@main
enum EntryPoint {
    static func main() async {
        StandardDescriptors.openClosedOnes()
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "fpfs").lastPathComponent
        if MountHelper.names.contains(name) {
            await MountHelper.main(Array(CommandLine.arguments.dropFirst()))
        } else {
            await FPFS.main()
        }
    }
}
