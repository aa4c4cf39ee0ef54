import PipelineCore
import PlatformSinks
import PushSinks

// Reading and printing the `sinks`, `fcm` and `apns` sections of the configuration file (see Config/README.md).

extension PipelineConfiguration.Sinks {
    /// The sink kinds the configuration can build.
    static let builtinKinds: Set<String> = ["kafka", "fcm", "apns"]

    /// The environment variables the settings name for secrets (`fcm.serviceAccountEnv`, `apns.privateKeyEnv`).
    var environmentNames: Set<String> {
        var names: Set<String> = []
        for source in [fcm.serviceAccount, apns.privateKey] {
            if case .environment(let name)? = source { names.insert(name) }
        }
        return names
    }

    mutating func apply(sinksSection section: JSONObject) throws(ConfigurationError) {
        for (key, item) in section {
            let path = "sinks.\(key)"
            switch key {
            case "fcm", "apns":
                let kinds: [String]
                if let text = item.stringValue {
                    kinds = PipelineConfiguration.splitServers(text)
                } else if let list = item.arrayValue {
                    kinds = try list.map { element throws(ConfigurationError) in try PipelineConfiguration.string(element, path) }
                } else {
                    throw ConfigurationError(key: path, reason: "expected an array of sink kinds (kafka, fcm, apns)")
                }
                routes[key == "fcm" ? .fcm : .apns] = kinds
            case "retry":
                for (retryKey, value) in try PipelineConfiguration.object(item, path) {
                    let retryPath = "\(path).\(retryKey)"
                    // The key is checked before its value: a misspelt key is reported as such, whatever its value.
                    func number() throws(ConfigurationError) -> Int { try PipelineConfiguration.positiveInteger(value, retryPath) }
                    switch retryKey {
                    case "initialBackoffMilliseconds": retry.initialBackoff = .milliseconds(try number())
                    case "maxBackoffSeconds": retry.maxBackoff = .seconds(try number())
                    case "deadlineSeconds": retry.deadline = .seconds(try number())
                    case "throttledBackoffSeconds": retry.throttledBackoff = .seconds(try number())
                    default:
                        throw ConfigurationError(key: retryPath, reason: "unknown key (expected initialBackoffMilliseconds, maxBackoffSeconds, deadlineSeconds, throttledBackoffSeconds)")
                    }
                }
            case "$comment":
                continue
            default:
                throw ConfigurationError(key: path, reason: "unknown key (expected fcm, apns, retry)")
            }
        }
    }

    /// Checks the routes name known sinks, and (`checkingCredentials`) that each HTTP sink used has its credentials
    /// configured.
    func validate(checkingCredentials: Bool = true) throws(ConfigurationError) {
        for (platform, kinds) in routes.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            try Self.validateRoute(kinds, of: platform, key: "sinks.\(platform.rawValue)")
        }
        try PipelineConfiguration.checkFirstWait(
            retry.initialBackoff,
            key: "sinks.retry.initialBackoffMilliseconds",
            longest: retry.maxBackoff,
            longestKey: "sinks.retry.maxBackoffSeconds"
        )
        guard checkingCredentials else { return }
        typealias EnvironmentKey = PipelineConfiguration.EnvironmentKey
        if uses("fcm"), fcm.serviceAccount == nil {
            throw ConfigurationError(
                key: "fcm.serviceAccountFile",
                reason: "required when sinks.fcm includes fcm (or fcm.serviceAccountEnv, or \(EnvironmentKey.fcmServiceAccountFile))"
            )
        }
        if uses("apns") {
            if apns.privateKey == nil {
                throw ConfigurationError(
                    key: "apns.privateKeyFile",
                    reason: "required when sinks.apns includes apns (or apns.privateKeyEnv, or \(EnvironmentKey.apnsPrivateKeyFile))"
                )
            }
            let required = [
                ("apns.keyId", EnvironmentKey.apnsKeyID, apns.keyID), ("apns.teamId", EnvironmentKey.apnsTeamID, apns.teamID),
                ("apns.topic", EnvironmentKey.apnsTopic, apns.topic),
            ]
            for (key, variable, value) in required where value.isEmpty {
                throw ConfigurationError(key: key, reason: "required when sinks.apns includes apns (or \(variable))")
            }
        }
    }

    /// Checks that the route of `platform`'s payloads names known sinks that take them, each once; errors name `key`,
    /// where the route was given.
    static func validateRoute(_ kinds: [String], of platform: Platform, key: String) throws(ConfigurationError) {
        if kinds.isEmpty { throw ConfigurationError(key: key, reason: "at least one sink is needed (kafka, fcm, apns)") }
        for kind in kinds where !builtinKinds.contains(kind) {
            throw ConfigurationError(key: key, reason: "unknown sink '\(kind)' (expected kafka, fcm or apns)")
        }
        if Set(kinds).count != kinds.count { throw ConfigurationError(key: key, reason: "a sink is named twice") }
        if platform == .fcm, kinds.contains("apns") { throw ConfigurationError(key: key, reason: "FCM payloads cannot go to APNs") }
        if platform == .apns, kinds.contains("fcm") { throw ConfigurationError(key: key, reason: "APNs payloads cannot go to FCM") }
    }

    func describedAsJSON() -> JSONValue {
        var object = JSONObject()
        object["fcm"] = .array((routes[.fcm] ?? []).map { .string($0) })
        object["apns"] = .array((routes[.apns] ?? []).map { .string($0) })
        object["retry"] = .object([
            "initialBackoffMilliseconds": .int(retry.initialBackoff.wholeMilliseconds),
            "maxBackoffSeconds": .int(retry.maxBackoff.wholeMilliseconds / 1000),
            "deadlineSeconds": .int(retry.deadline.wholeMilliseconds / 1000),
            "throttledBackoffSeconds": .int(retry.throttledBackoff.wholeMilliseconds / 1000),
        ])
        return .object(object)
    }
}

extension FCMSinkConfiguration {
    mutating func apply(_ section: JSONObject) throws(ConfigurationError) {
        for (key, item) in section {
            let path = "fcm.\(key)"
            switch key {
            case "serviceAccountFile": serviceAccount = .file(path: try PipelineConfiguration.string(item, path))
            case "serviceAccountEnv": serviceAccount = .environment(name: try PipelineConfiguration.string(item, path))
            case "projectId": projectID = try PipelineConfiguration.string(item, path)
            case "baseUrl": baseURL = try PipelineConfiguration.url(item, path)
            case "tokenUrl": tokenURL = try PipelineConfiguration.url(item, path)
            case "$comment": continue
            default:
                guard try applyHTTPSetting(key, item, path, connection: &connection, concurrency: &concurrency) else {
                    throw ConfigurationError(
                        key: path,
                        reason: "unknown key (expected serviceAccountFile, serviceAccountEnv, projectId, baseUrl, tokenUrl, \(httpSettingNames))"
                    )
                }
            }
        }
    }

    func describedAsJSON() -> JSONValue {
        var object = JSONObject()
        switch serviceAccount {
        case .file(let path)?: object["serviceAccountFile"] = .string(path)
        case .environment(let name)?: object["serviceAccountEnv"] = .string(name)
        case .value?: object["serviceAccount"] = "****"
        case nil: break
        }
        object.set("projectId", projectID)
        object["baseUrl"] = .string(baseURL)
        object.set("tokenUrl", tokenURL)
        describeHTTPSettings(connection: connection, concurrency: concurrency, into: &object)
        return .object(object)
    }
}

extension APNsSinkConfiguration {
    mutating func apply(_ section: JSONObject) throws(ConfigurationError) {
        for (key, item) in section {
            let path = "apns.\(key)"
            switch key {
            case "environment":
                let name = try PipelineConfiguration.string(item, path)
                guard let parsed = Environment(rawValue: name) else {
                    throw ConfigurationError(key: path, reason: "expected production or sandbox, found '\(name)'")
                }
                environment = parsed
            case "baseUrl": baseURL = try PipelineConfiguration.url(item, path)
            case "keyId": keyID = try PipelineConfiguration.string(item, path)
            case "teamId": teamID = try PipelineConfiguration.string(item, path)
            case "privateKeyFile": privateKey = .file(path: try PipelineConfiguration.string(item, path))
            case "privateKeyEnv": privateKey = .environment(name: try PipelineConfiguration.string(item, path))
            case "topic": topic = try PipelineConfiguration.string(item, path)
            case "tokenRefreshMinutes":
                let minutes = try PipelineConfiguration.positiveInteger(item, path)
                guard (20...50).contains(minutes) else { throw ConfigurationError(key: path, reason: "expected 20 to 50 minutes, found \(minutes)") }
                tokenRefreshMinutes = minutes
            case "$comment": continue
            default:
                guard try applyHTTPSetting(key, item, path, connection: &connection, concurrency: &concurrency) else {
                    throw ConfigurationError(
                        key: path,
                        reason: "unknown key (expected environment, baseUrl, keyId, teamId, privateKeyFile, privateKeyEnv, topic, tokenRefreshMinutes, \(httpSettingNames))"
                    )
                }
            }
        }
    }

    func describedAsJSON() -> JSONValue {
        var object = JSONObject()
        object["environment"] = .string(environment.rawValue)
        object.set("baseUrl", baseURL)
        object["keyId"] = .string(keyID)
        object["teamId"] = .string(teamID)
        switch privateKey {
        case .file(let path)?: object["privateKeyFile"] = .string(path)
        case .environment(let name)?: object["privateKeyEnv"] = .string(name)
        case .value?: object["privateKey"] = "****"
        case nil: break
        }
        object["topic"] = .string(topic)
        object["tokenRefreshMinutes"] = .int(tokenRefreshMinutes)
        describeHTTPSettings(connection: connection, concurrency: concurrency, into: &object)
        return .object(object)
    }
}

/// The settings every HTTP sink takes (``applyHTTPSetting(_:_:_:connection:concurrency:)``), for errors.
private let httpSettingNames = "concurrency, caCertificateFile, requestTimeoutSeconds"

/// Reads a setting every HTTP sink has (`concurrency`, `caCertificateFile`, `requestTimeoutSeconds`).
///
/// - Returns: whether `key` was one of them.
private func applyHTTPSetting(
    _ key: String,
    _ item: JSONValue,
    _ path: String,
    connection: inout HTTPSinkConnection,
    concurrency: inout Int
) throws(ConfigurationError) -> Bool {
    switch key {
    case "concurrency": concurrency = try PipelineConfiguration.positiveInteger(item, path)
    case "caCertificateFile": connection.caCertificateFile = try PipelineConfiguration.string(item, path)
    case "requestTimeoutSeconds": connection.requestTimeout = .seconds(try PipelineConfiguration.positiveInteger(item, path))
    default: return false
    }
    return true
}

/// Prints the settings ``applyHTTPSetting(_:_:_:connection:concurrency:)`` reads.
private func describeHTTPSettings(connection: HTTPSinkConnection, concurrency: Int, into object: inout JSONObject) {
    object["concurrency"] = .int(concurrency)
    object.set("caCertificateFile", connection.caCertificateFile)
    object["requestTimeoutSeconds"] = .int(connection.requestTimeout.wholeMilliseconds / 1000)
}

extension Duration {
    /// The duration in seconds, with its fraction.
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// The duration in whole milliseconds (saturating).
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = Int(seconds).multipliedReportingOverflow(by: 1000)
        let (total, carried) = scaled.addingReportingOverflow(Int(attoseconds / 1_000_000_000_000_000))
        guard !overflow, !carried else { return seconds < 0 ? .min : .max }
        return total
    }
}
