import Foundation

/// Where a secret (a service-account key, an APNs .p8 key) is read from. The secret itself is never logged or
/// printed; ``description`` names only its source.
public enum SecretSource: Sendable, Equatable, CustomStringConvertible {
    /// A file's contents.
    case file(path: String)
    /// An environment variable's value.
    case environment(name: String)
    /// The value itself (handed over by code, e.g. read from a secret manager).
    case value(String)

    /// Reads the secret.
    ///
    /// - Parameters:
    ///   - environment: the process environment.
    ///   - key: the stem of the configuration keys it is configured by (`fcm.serviceAccount`): an error names the
    ///     one the source was given as, `<key>File` or `<key>Env`.
    /// - Throws: ``SinkConfigurationError`` when the file cannot be read (saying why) or the variable is unset or empty.
    public func read(environment: [String: String], key: String) throws(SinkConfigurationError) -> String {
        switch self {
        case .file(let path):
            do {
                return String(decoding: try UnreadableFile.contents(of: path), as: UTF8.self)
            } catch {
                throw SinkConfigurationError(key: "\(key)File", reason: error.description)
            }
        case .environment(let name):
            guard let value = environment[name], !value.isEmpty else {
                throw SinkConfigurationError(key: "\(key)Env", reason: "the environment variable \(name) is not set")
            }
            return value
        case .value(let value):
            return value
        }
    }

    /// The source without the secret: `file /path`, `environment NAME`, `value (hidden)`.
    public var description: String {
        switch self {
        case .file(let path): "file \(path)"
        case .environment(let name): "environment \(name)"
        case .value: "value (hidden)"
        }
    }
}

/// A sink setting that cannot be used: which key and why. Raised at start-up, before anything is consumed.
public struct SinkConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration key (`fcm.serviceAccountFile`, `apns.keyId`, …).
    public var key: String
    /// What was wrong.
    public var reason: String

    /// Creates an error.
    public init(key: String, reason: String) {
        self.key = key
        self.reason = reason
    }

    public var description: String { "configuration: \(key): \(reason)" }
}
