import Foundation

/// A file that could not be read, and why, in the words an operator acts on: Foundation's own text for these is
/// "The operation could not be completed".
public struct UnreadableFile: Error, Sendable, Equatable, CustomStringConvertible {
    /// The path as it was given.
    public var path: String
    /// Why: `no such file`, `permission denied (this process runs as uid 65534)`, `a directory, not a file`, or
    /// Foundation's description of another failure.
    public var reason: String

    public var description: String { "cannot read the file '\(path)': \(reason)" }

    /// The bytes of the file at `path`.
    ///
    /// - Throws: ``UnreadableFile`` saying why it could not be read.
    public static func contents(of path: String) throws(UnreadableFile) -> [UInt8] {
        do {
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch let error as CocoaError {
            // Foundation reads regular files only, and calls anything else it cannot read a permission problem: a
            // pipe or a device (`--config <(envsubst < pipeline.json)`, `/dev/stdin`) is read as a stream.
            if error.code == .fileReadNoPermission, let handle = FileHandle(forReadingAtPath: path) {
                defer { try? handle.close() }
                do { return Array(try handle.readToEnd() ?? Data()) } catch {}
            }
            var isDirectory: ObjCBool = false
            let reason: String =
                switch error.code {
                case .fileReadNoSuchFile, .fileNoSuchFile: "no such file"
                case .fileReadNoPermission: "permission denied (this process runs as uid \(getuid()))"
                case _ where FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue:
                    "a directory, not a file"
                default: error.localizedDescription
                }
            throw UnreadableFile(path: path, reason: reason)
        } catch {
            throw UnreadableFile(path: path, reason: "\(error)")
        }
    }
}
