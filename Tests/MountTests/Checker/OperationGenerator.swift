import Foundation

/// Draws the operation checker's next step from the model's state, so that most operations
/// are valid and names collide often: a handful of names, folders at most three deep.
struct OperationGenerator: Sendable {
    /// The names every path is made of, files and folders alike.
    static let names = ["a", "b.txt", "c.txt", "d.bin", "p", "q"]
    /// The temporary name of a swap (`mv A T; mv B A; mv T B`).
    static let swapName = "t~"

    private var random: SeededGenerator
    private var nextHandle = 0
    /// Operations already decided (the second and third rename of a swap).
    private var queued: [CheckerOperation] = []
    /// Whether kills and outages may be drawn.
    let disruptions: Bool
    /// Shapes left out with FPFS_CHECK_SKIP (comma-separated), to look past bugs known already:
    /// `swaps` (issue 51 item 3) and `offline-kills` (a kill while the remote is away makes the
    /// next mount start offline, and a folder remote missing when a mount starts is never
    /// reached by that mount again; DECISIONS 214).
    static let skipped = Set(
        (ProcessInfo.processInfo.environment["FPFS_CHECK_SKIP"] ?? "").split(separator: ",").map(String.init))

    init(seed: UInt64, disruptions: Bool = true) {
        random = SeededGenerator(seed: seed)
        self.disruptions = disruptions
    }

    /// Files for the remote to hold before the first mount.
    mutating func initialTree() -> [(String, CheckerModel.Entry)] {
        var entries: [(String, CheckerModel.Entry)] = [("p", .directory)]
        for name in ["a", "b.txt", "p/c.txt"] where random.chance(70) {
            entries.append((name, .file(random.bytes(Int.random(in: 1...3000, using: &random)))))
        }
        return entries
    }

    /// The next step. `away`: the remote is unreachable; `racing`: a race window is open, in
    /// which only operations on the mount are drawn.
    mutating func next(_ model: CheckerModel, away: Bool, racing: Bool) -> CheckerOperation {
        if !queued.isEmpty { return queued.removeFirst() }
        if away, random.chance(20) { return .recover }
        while true {
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<22:
                if let handle = model.openHandles.randomElement(using: &random) {
                    return write(handle, size: model.content(ofHandle: handle)?.count ?? 0)
                }
                return create(model)
            case 22..<32: return create(model)
            case 32..<37:
                guard let path = anyPath(model, files: true) else { continue }
                nextHandle += 1
                return .open(path, truncate: random.chance(30), handle: nextHandle)
            case 37..<45:
                guard let handle = model.openHandles.randomElement(using: &random) else { continue }
                return .close(handle: handle)
            case 45..<49:
                guard let handle = model.openHandles.randomElement(using: &random) else { continue }
                return .fsync(handle: handle)
            case 49..<53:
                guard let path = anyPath(model, files: true) else { continue }
                let size = model.node(at: path)?.content.count ?? 0
                return .truncate(path, size: Int.random(in: 0...(size + 200), using: &random))
            case 53..<62:
                guard let from = anyPath(model, files: random.chance(75)) else { continue }
                return .rename(from, random.chance(50) ? anyPath(model, files: true) ?? newPath(model) : newPath(model))
            case 62..<65:
                guard !Self.skipped.contains("swaps") else { continue }
                let files = model.paths.filter { model.node(at: $0)?.kind == .file }
                guard files.count >= 2 else { continue }
                let pair = Array(files.shuffled(using: &random).prefix(2))
                let temporary = CheckerModel.join(CheckerModel.parent(of: pair[0]), Self.swapName)
                queued = [.rename(pair[1], pair[0]), .rename(temporary, pair[1])]
                return .rename(pair[0], temporary)
            case 65..<70:
                guard let path = anyPath(model, files: true) else { continue }
                return .unlink(path)
            case 70..<75: return .mkdir(newPath(model, depth: 2))
            case 75..<78:
                guard let path = anyPath(model, files: false) else { continue }
                return .rmdir(path)
            case 78..<82:
                guard let path = anyPath(model, files: true) else { continue }
                return .setxattr(
                    path, name: "user.checker.\(Int.random(in: 0..<3, using: &random))",
                    value: String(Int.random(in: 0..<1000, using: &random)))
            case 82..<84:
                guard !away, !racing else { continue }
                return .sync
            case 84..<94:
                guard !away, !racing else { continue }
                return remote(model)
            case 94..<97:
                guard disruptions, !racing, !away || !Self.skipped.contains("offline-kills") else {
                    continue
                }
                return .kill
            default:
                guard disruptions, !away, !racing else { continue }
                return .outage
            }
        }
    }

    /// How many operations of the mount a race window lets through before its checkpoint.
    mutating func raceWindow() -> Int { Int.random(in: 0...3, using: &random) }

    private mutating func write(_ handle: Int, size: Int) -> CheckerOperation {
        let large = random.chance(8)
        let count = large ? Int.random(in: 65_536...300_000, using: &random) : Int.random(in: 1...4096, using: &random)
        let offset: Int
        switch Int.random(in: 0..<4, using: &random) {
        case 0: offset = 0
        case 1: offset = size
        default: offset = Int.random(in: 0...(size + 100), using: &random)
        }
        return .write(handle: handle, offset: offset, bytes: random.bytes(count))
    }

    private mutating func create(_ model: CheckerModel) -> CheckerOperation {
        nextHandle += 1
        return .create(newPath(model), handle: nextHandle)
    }

    private mutating func remote(_ model: CheckerModel) -> CheckerOperation {
        let calm = random.chance(50)
        let files = model.paths.filter { model.node(at: $0)?.kind == .file }
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            let path = random.chance(60) ? files.randomElement(using: &random) ?? newPath(model) : newPath(model)
            return .remoteWrite(path, bytes: random.bytes(Int.random(in: 1...3000, using: &random)), calm: calm)
        case 1:
            guard let path = files.randomElement(using: &random) else { return .sync }
            return .remoteDelete(path, calm: calm)
        default:
            guard let path = files.randomElement(using: &random) else { return .sync }
            return .remoteRename(path, newPath(model), calm: calm)
        }
    }

    /// A path in an existing folder, taken or not (not a folder of the model's).
    private mutating func newPath(_ model: CheckerModel, depth: Int = 3) -> String {
        let folders = [""] + model.paths.filter { model.isDirectory($0) && $0.split(separator: "/").count < depth }
        var path = ""
        for _ in 0..<50 {
            path = CheckerModel.join(folders.randomElement(using: &random)!, Self.names.randomElement(using: &random)!)
            if !model.isDirectory(path) { break }
        }
        return path
    }

    /// A linked path of a file (or folder), now and then any path at all.
    private mutating func anyPath(_ model: CheckerModel, files: Bool) -> String? {
        if random.chance(10) { return newPath(model) }
        let kind: CheckerModel.Kind = files ? .file : .directory
        return model.paths.filter { model.node(at: $0)?.kind == kind }.randomElement(using: &random)
    }
}
