// When recorded cache blocks can be trusted: durability epochs (DECISIONS 6, 154).
//
// A block is recorded as soon as its bytes are in the cache file, with the epoch it was recorded
// in. An epoch becomes durable once the files written in it have been fsynced. A `kill -9` of the
// daemon loses nothing the kernel was given, so only a crash of the machine can: a mount under
// another boot id forgets the blocks of the contents recorded in epochs not durable.

import Foundation
import GRDB

extension MetadataStore {
    static func registerDurabilityMigration(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v6-durability-epochs") { db in
            // Rows recorded before this migration were fsynced first: epoch 0, durable.
            try db.execute(
                sql: """
                    ALTER TABLE content ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
                    CREATE TABLE durability (
                      id INTEGER PRIMARY KEY CHECK (id = 1),
                      bootID TEXT NOT NULL,
                      currentEpoch INTEGER NOT NULL,
                      durableEpoch INTEGER NOT NULL
                    );
                    """)
        }
    }

    /// Starts a mount's epochs under `bootID` (the kernel's, which changes at every boot): returns
    /// the epoch blocks are recorded in from now on, and how many contents lost their blocks. All
    /// earlier epochs are settled: under the same boot id as the last mount, the caller has first
    /// flushed the cache folder's filesystem (`syncfs`), which made every byte written before
    /// durable; under another, the machine went down, and the contents recorded
    /// in epochs after the last durable one lose every block (the durable ones with them: the map
    /// does not say which epoch each block came in).
    public func beginDurabilityEpochs(bootID: String) async throws -> (epoch: Int64, forgottenContents: Int) {
        try await write { db in
            var current: Int64 = 0
            var forgotten = 0
            if let row = try Row.fetchOne(
                db, sql: "SELECT bootID, currentEpoch, durableEpoch FROM durability WHERE id = 1")
            {
                current = row["currentEpoch"]
                if row["bootID"] as String != bootID {
                    try db.execute(
                        sql: """
                            UPDATE content SET presentBlocks = zeroblob(length(presentBlocks))
                            WHERE epoch > ? AND presentBlocks != zeroblob(length(presentBlocks))
                            """,
                        arguments: [row["durableEpoch"] as Int64])
                    forgotten = db.changesCount
                }
            }
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO durability (id, bootID, currentEpoch, durableEpoch) VALUES (1, ?, ?, ?)
                    """,
                arguments: [bootID, current + 1, current])
            return (current + 1, forgotten)
        }
    }

    /// The boot id the last mount's epochs began under; nil before the first.
    public func durabilityBootID() async throws -> String? {
        try await database.read { db in try String.fetchOne(db, sql: "SELECT bootID FROM durability WHERE id = 1") }
    }

    /// Starts the next epoch and returns it: blocks recorded from now on belong to it.
    public func advanceDurabilityEpoch() async throws -> Int64 {
        try await write { db in
            try db.execute(sql: "UPDATE durability SET currentEpoch = currentEpoch + 1 WHERE id = 1")
            return try Int64.fetchOne(db, sql: "SELECT currentEpoch FROM durability WHERE id = 1") ?? 0
        }
    }

    /// Records that the blocks of `epoch` and every earlier one are on disk.
    public func markDurable(through epoch: Int64) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE durability SET durableEpoch = max(durableEpoch, ?) WHERE id = 1", arguments: [epoch])
        }
    }
}
