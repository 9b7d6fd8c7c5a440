import FileProviderKit
import Foundation

/// The write half: every change is checked against the version it was based on and applied under
/// the same lock, so a test that changes the remote between the engine's read and its upload sees
/// `conflict` exactly as a real remote would report it.
extension InMemoryProvider {
    public func createItem(basedOn template: Item, fields: ItemFields, contents: URL?, options: CreateItemOptions)
        async throws -> Item
    {
        recorder.record(RecordedCall(operation: .createItem, identifier: template.identifier))
        let bytes = template.kind == .file ? try await BlockingIO.read(contents) : []
        return try withTree { tree throws(ProviderError) in
            if let existing = try tree.directory(template.parentIdentifier).children[template.filename] {
                // A replay after a crash finds its own earlier create.
                if options.contains(.mayAlreadyExist), let node = tree.nodes[existing], node.item.kind == template.kind
                {
                    return node.item
                }
                throw .filenameCollision(existing: existing)
            }
            return try tree.insert(
                name: template.filename, parent: template.parentIdentifier, kind: template.kind, contents: bytes,
                symlinkTarget: template.symlinkTarget, template: template, fields: fields)
        }
    }

    public func modifyItem(
        _ item: Item, baseVersion: ItemVersion, changedFields: ItemFields, contents: URL?, options: ModifyItemOptions
    ) async throws -> Item {
        recorder.record(RecordedCall(operation: .modifyItem, identifier: item.identifier))
        let bytes = changedFields.contains(.contents) && item.kind == .file ? try await BlockingIO.read(contents) : nil
        return try withTree { tree throws(ProviderError) in
            let current = try tree.node(item.identifier)
            if current.item.version != baseVersion {
                let applied =
                    (!changedFields.contains(.filename) || current.item.filename == item.filename)
                    && (!changedFields.contains(.parentIdentifier)
                        || current.item.parentIdentifier == item.parentIdentifier)
                    && (bytes == nil || bytes == current.contents)
                if options.contains(.mayAlreadyExist) && applied { return current.item }
                throw .conflict(remote: current.item)
            }
            var result = current.item
            let parent = changedFields.contains(.parentIdentifier) ? item.parentIdentifier : result.parentIdentifier
            let name = changedFields.contains(.filename) ? item.filename : result.filename
            if parent != result.parentIdentifier || name != result.filename {
                result = try tree.move(item.identifier, to: parent, name: name)
            }
            if let bytes { result = try tree.setContents(item.identifier, to: bytes) }
            if changedFields.contains(.symlinkTarget), let target = item.symlinkTarget {
                result = try tree.setSymlinkTarget(item.identifier, to: target)
            }
            let metadata = changedFields.intersection([
                .contentModificationDate, .creationDate, .permissions, .userInfo,
            ])
            if !metadata.isEmpty { result = try tree.setMetadata(item.identifier, fields: metadata, from: item) }
            return result
        }
    }

    public func deleteItem(identifier: ItemIdentifier, baseVersion: ItemVersion?, options: DeleteItemOptions)
        async throws
    {
        recorder.record(RecordedCall(operation: .deleteItem, identifier: identifier))
        try withTree { tree throws(ProviderError) in
            let current = try tree.node(identifier)
            if let baseVersion, current.item.version != baseVersion { throw .conflict(remote: current.item) }
            try tree.remove(identifier, recursive: options.contains(.recursive))
        }
    }
}
