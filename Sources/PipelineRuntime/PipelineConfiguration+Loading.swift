public import PipelineCore
import PlatformSinks
import PushSinks

/// A configuration value that could not be used: which key, from which source, and why.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The key (`kafka.bootstrapServers`, `CAMPAIGN_PIPELINE_GROUP`, `--until-idle`).
    public var key: String
    /// What was wrong.
    public var reason: String

    public var description: String { "configuration: \(key): \(reason)" }
}

extension PipelineConfiguration {
    /// The environment variables the pipeline reads (each overrides the file).
    public enum EnvironmentKey {
        /// A configuration file to read (like `--config`).
        public static let configFile = "CAMPAIGN_PIPELINE_CONFIG"
        /// `host:port,...` of the brokers.
        public static let bootstrapServers = "CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS"
        /// The consumer group.
        public static let group = "CAMPAIGN_PIPELINE_GROUP"
        /// Every `CAMPAIGN_PIPELINE_KAFKA_<NAME>` variable sets the librdkafka property `<name>` with `_` read as
        /// `.` (`CAMPAIGN_PIPELINE_KAFKA_SASL_PASSWORD` → `sasl.password`). The prefix is the project's own, so
        /// unrelated variables of a container (`KAFKA_HOME`, …) never become properties.
        public static let kafkaPropertyPrefix = "CAMPAIGN_PIPELINE_KAFKA_"
        /// The sinks of FCM payloads, comma-separated (`kafka,fcm`).
        public static let fcmSinks = "CAMPAIGN_PIPELINE_SINKS_FCM"
        /// The sinks of APNs payloads, comma-separated (`apns`).
        public static let apnsSinks = "CAMPAIGN_PIPELINE_SINKS_APNS"
        /// A path to the FCM service-account JSON key file.
        public static let fcmServiceAccountFile = "CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT_FILE"
        /// The FCM service-account JSON key itself (read when the sink starts; never printed).
        public static let fcmServiceAccount = "CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT"
        /// The Firebase project id (default: the key's `project_id`).
        public static let fcmProjectID = "CAMPAIGN_PIPELINE_FCM_PROJECT_ID"
        /// A path to the APNs .p8 auth key.
        public static let apnsPrivateKeyFile = "CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY_FILE"
        /// The APNs .p8 auth key itself (PEM; read when the sink starts; never printed).
        public static let apnsPrivateKey = "CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY"
        /// The APNs key id.
        public static let apnsKeyID = "CAMPAIGN_PIPELINE_APNS_KEY_ID"
        /// The APNs team id.
        public static let apnsTeamID = "CAMPAIGN_PIPELINE_APNS_TEAM_ID"
        /// The app's bundle id (`apns-topic`).
        public static let apnsTopic = "CAMPAIGN_PIPELINE_APNS_TOPIC"
        /// `production` or `sandbox`.
        public static let apnsEnvironment = "CAMPAIGN_PIPELINE_APNS_ENVIRONMENT"
        /// The port of `run`'s metrics endpoint (read by the command line, not by ``load(file:environment:checkingSinkCredentials:)``).
        public static let metricsPort = "CAMPAIGN_PIPELINE_METRICS_PORT"

        /// The prefix of every variable the pipeline reads.
        public static let prefix = "CAMPAIGN_PIPELINE_"

        /// Every variable the pipeline reads by its name (the `CAMPAIGN_PIPELINE_KAFKA_<NAME>` properties aside).
        public static let all = [
            configFile, bootstrapServers, group, metricsPort, fcmSinks, apnsSinks, fcmServiceAccountFile, fcmServiceAccount,
            fcmProjectID, apnsPrivateKeyFile, apnsPrivateKey, apnsKeyID, apnsTeamID, apnsTopic, apnsEnvironment,
        ]

        /// The first `CAMPAIGN_PIPELINE_*` variable of `environment` the pipeline does not read (in name order), which is
        /// refused as a misspelt key of the file is: `CAMPAIGN_PIPELINE_GROUPID` would otherwise leave the instance in
        /// the default group without a word.
        static func firstUnknown(in environment: [String: String]) -> String? {
            environment.keys.filter { $0.hasPrefix(prefix) && !$0.hasPrefix(kafkaPropertyPrefix) && !all.contains($0) }.min()
        }

        /// Whether `name` is one of the variables Kubernetes gives every container for each Service of its namespace
        /// (unless the pod sets `enableServiceLinks: false`), in Docker's links' form: for a Service
        /// `campaign-pipeline-metrics` with port 9464, `CAMPAIGN_PIPELINE_METRICS_SERVICE_HOST`, `…_SERVICE_PORT`,
        /// `…_SERVICE_PORT_<PORT NAME>`, `…_PORT` (`tcp://10.0.0.7:9464`), `…_PORT_9464_TCP` and its `_PROTO`, `_PORT`
        /// and `_ADDR`. A Service named like the pipeline would otherwise stop it (an unknown variable), make
        /// librdkafka properties of them (`CAMPAIGN_PIPELINE_KAFKA_SERVICE_HOST`), or set its metrics port to
        /// `tcp://…`. None of the pipeline's own variables has these forms (its `…_PORT` holds a number).
        public static func isServiceLink(_ name: String, _ value: String) -> Bool {
            if name.hasSuffix("_SERVICE_HOST") || name.hasSuffix("_SERVICE_PORT") || name.contains("_SERVICE_PORT_") { return true }
            // `…_PORT_<number>_<TCP|UDP|SCTP>`, then nothing, `_PROTO`, `_PORT` or `_ADDR`.
            let parts = name.split(separator: "_", omittingEmptySubsequences: false)
            let tail = parts.count >= 4 && ["PROTO", "PORT", "ADDR"].contains(parts[parts.count - 1]) ? 1 : 0
            if parts.count >= 3 + tail {
                let (port, number, proto) = (parts[parts.count - 3 - tail], parts[parts.count - 2 - tail], parts[parts.count - 1 - tail])
                if port == "PORT", !number.isEmpty, number.allSatisfy({ ("0"..."9").contains($0) }), ["TCP", "UDP", "SCTP"].contains(proto) {
                    return true
                }
            }
            // `…_PORT` by its value: the pipeline's own `CAMPAIGN_PIPELINE_METRICS_PORT` holds a number.
            return name.hasSuffix("_PORT") && ["tcp://", "udp://", "sctp://"].contains { value.hasPrefix($0) }
        }
    }

    /// Builds the effective configuration: defaults, then the file, then the environment. Flags are applied by
    /// the caller afterwards.
    ///
    /// - Parameters:
    ///   - file: the parsed configuration file (see `Config/README.md`), if any.
    ///   - environment: the process environment.
    ///   - checkingSinkCredentials: whether the FCM and APNs sinks the routes name must have their credentials
    ///     (`false` for a run that sends to neither, as a replay without `--deliver`).
    /// - Throws: ``ConfigurationError`` naming the key and what was wrong with it.
    public static func load(
        file: JSONObject?,
        environment: [String: String],
        checkingSinkCredentials: Bool = true
    ) throws(ConfigurationError) -> PipelineConfiguration {
        var configuration = PipelineConfiguration(bootstrapServers: [])
        if let file { try configuration.apply(file: file) }
        // The variables that are no settings of the pipeline's, whatever their names: the file's secrets, service links.
        let named = configuration.sinks.environmentNames
        let settings = environment.filter { name, value in !named.contains(name) && !EnvironmentKey.isServiceLink(name, value) }
        if let unknown = EnvironmentKey.firstUnknown(in: settings) {
            throw ConfigurationError(
                key: unknown,
                reason: "unknown variable (expected \(EnvironmentKey.all.joined(separator: ", ")), or \(EnvironmentKey.kafkaPropertyPrefix)<PROPERTY> for a librdkafka property)"
            )
        }
        if let servers = environment[EnvironmentKey.bootstrapServers], !servers.isEmpty {
            configuration.bootstrapServers = Self.splitServers(servers)
        }
        if let group = environment[EnvironmentKey.group], !group.isEmpty { configuration.groupID = group }
        // An empty variable is unset, as every other one is (librdkafka refuses an empty value anyway).
        for (name, value) in settings where name.hasPrefix(EnvironmentKey.kafkaPropertyPrefix) && !value.isEmpty {
            let property = name.dropFirst(EnvironmentKey.kafkaPropertyPrefix.count).lowercased().replacingOccurrences(of: "_", with: ".")
            guard !property.isEmpty else { continue }
            try checkPassThrough(property, key: name)
            configuration.overrideKafkaProperty(property, value, source: name)
        }
        try configuration.applySinkEnvironment(environment)
        try checkFirstWait(
            configuration.retryBackoff,
            key: "processing.retryBackoffMilliseconds",
            longest: configuration.maxRetryBackoff,
            longestKey: "processing.maxRetryBackoffSeconds"
        )
        try configuration.sinks.validate(checkingCredentials: checkingSinkCredentials)
        try configuration.topics.validate()
        return configuration
    }

    private mutating func applySinkEnvironment(_ environment: [String: String]) throws(ConfigurationError) {
        func value(_ name: String) -> String? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            return text
        }
        // Checked here, to name the variable: the file's route it replaces may be a good one.
        for (platform, name) in [(Platform.fcm, EnvironmentKey.fcmSinks), (.apns, EnvironmentKey.apnsSinks)] {
            guard let list = value(name) else { continue }
            let kinds = Self.splitServers(list)
            try Sinks.validateRoute(kinds, of: platform, key: name)
            sinks.routes[platform] = kinds
        }
        if let path = value(EnvironmentKey.fcmServiceAccountFile) { sinks.fcm.serviceAccount = .file(path: path) }
        if value(EnvironmentKey.fcmServiceAccount) != nil { sinks.fcm.serviceAccount = .environment(name: EnvironmentKey.fcmServiceAccount) }
        if let project = value(EnvironmentKey.fcmProjectID) { sinks.fcm.projectID = project }
        if let path = value(EnvironmentKey.apnsPrivateKeyFile) { sinks.apns.privateKey = .file(path: path) }
        if value(EnvironmentKey.apnsPrivateKey) != nil { sinks.apns.privateKey = .environment(name: EnvironmentKey.apnsPrivateKey) }
        if let keyID = value(EnvironmentKey.apnsKeyID) { sinks.apns.keyID = keyID }
        if let teamID = value(EnvironmentKey.apnsTeamID) { sinks.apns.teamID = teamID }
        if let topic = value(EnvironmentKey.apnsTopic) { sinks.apns.topic = topic }
        if let name = value(EnvironmentKey.apnsEnvironment) {
            guard let parsed = APNsSinkConfiguration.Environment(rawValue: name) else {
                throw ConfigurationError(key: EnvironmentKey.apnsEnvironment, reason: "expected production or sandbox, found '\(name)'")
            }
            sinks.apns.environment = parsed
        }
    }

    /// Refuses a librdkafka property the pipeline sets itself and that a pass-through value would silently
    /// override: `group.id` (set with `kafka.groupId`, `CAMPAIGN_PIPELINE_GROUP` or `--group`). Passed through, it
    /// would also put a replay, which reads in a group of its own, into the live group, and commit there. And
    /// `bootstrap.servers` or its alias `metadata.broker.list` (set with `kafka.bootstrapServers`,
    /// `CAMPAIGN_PIPELINE_BOOTSTRAP_SERVERS` or `--bootstrap-servers`): passed through, it would win over all three,
    /// the flag included, while the logs and `--print-config` named the brokers those gave.
    ///
    /// - Throws: ``ConfigurationError`` naming `key`, where the property was given.
    public static func checkPassThrough(_ property: String, key: String) throws(ConfigurationError) {
        switch property {
        case "group.id":
            throw ConfigurationError(
                key: key,
                reason: "the consumer group is set with kafka.groupId, \(EnvironmentKey.group) or --group, not as a librdkafka property "
                    + "(passed through, group.id would override it, and put a replay into the live group)"
            )
        case "enable.auto.commit", "enable.auto.offset.store":
            throw ConfigurationError(
                key: key,
                reason: "the pipeline sets \(property) itself: it stores an event's offset once its outcome is acknowledged and "
                    + "commits the stored offsets in the background, at a revocation and at a stop (passed through, "
                    + "enable.auto.commit=false would commit only at a stop, and a crash or rebalance would send everything "
                    + "since again); auto.commit.interval.ms sets how often"
            )
        case "bootstrap.servers", "metadata.broker.list":
            throw ConfigurationError(
                key: key,
                reason: "the brokers are set with kafka.bootstrapServers, \(EnvironmentKey.bootstrapServers) or --bootstrap-servers, not as a "
                    + "librdkafka property (passed through, \(property) would override them, --bootstrap-servers included)"
            )
        default:
            return
        }
    }

    /// Refuses a first retry wait (`key`) longer than the longest (`longestKey`): it would be cut to the longest.
    static func checkFirstWait(_ first: Duration, key: String, longest: Duration, longestKey: String) throws(ConfigurationError) {
        guard first > longest else { return }
        throw ConfigurationError(
            key: key,
            reason: "\(first.wholeMilliseconds) ms is longer than \(longestKey) (\(longest.wholeMilliseconds / 1000) s): the first wait "
                + "cannot be longer than the longest"
        )
    }

    /// Splits `a:1, b:2` into `["a:1", "b:2"]`.
    public static func splitServers(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private mutating func apply(file: JSONObject) throws(ConfigurationError) {
        for (section, value) in file {
            switch section {
            case "kafka":
                let kafka = try Self.object(value, "kafka")
                for (key, item) in kafka {
                    let path = "kafka.\(key)"
                    switch key {
                    case "bootstrapServers":
                        if let text = item.stringValue {
                            bootstrapServers = Self.splitServers(text)
                        } else if let list = item.arrayValue {
                            bootstrapServers = try list.enumerated().map { index, element throws(ConfigurationError) in
                                let server = try Self.string(element, path).trimmingCharacters(in: .whitespaces)
                                guard !server.isEmpty else { throw ConfigurationError(key: "\(path)[\(index)]", reason: "an empty broker address") }
                                return server
                            }
                        } else {
                            throw ConfigurationError(key: path, reason: "expected a string or an array of strings")
                        }
                    case "groupId": groupID = try Self.name(item, path)
                    case "properties":
                        kafkaProperties = try Self.stringMap(item, path)
                        for property in kafkaProperties.keys { try Self.checkPassThrough(property, key: "\(path).\(property)") }
                    case "consumerProperties":
                        consumerProperties = try Self.stringMap(item, path)
                        for property in consumerProperties.keys { try Self.checkPassThrough(property, key: "\(path).\(property)") }
                    case "producerProperties":
                        producerProperties = try Self.stringMap(item, path)
                        // The producer is in no group: only the brokers can be overridden here.
                        for property in producerProperties.keys where property != "group.id" {
                            try Self.checkPassThrough(property, key: "\(path).\(property)")
                        }
                    default:
                        throw ConfigurationError(
                            key: path,
                            reason: "unknown key (expected bootstrapServers, groupId, properties, consumerProperties, producerProperties)"
                        )
                    }
                }
            case "topics":
                for (key, item) in try Self.object(value, "topics") {
                    // The key is checked before its value: a misspelt key is reported as such, whatever its value.
                    let path = "topics.\(key)"
                    switch key {
                    case "sends": topics.sends = try Self.name(item, path)
                    case "definitions": topics.definitions = try Self.name(item, path)
                    case "fcm": topics.fcm = try Self.name(item, path)
                    case "apns": topics.apns = try Self.name(item, path)
                    case "analytics": topics.analytics = try Self.name(item, path)
                    case "deadLetters": topics.deadLetters = try Self.name(item, path)
                    case "timers": topics.timers = try Self.name(item, path)
                    case "tokens": topics.tokens = try Self.name(item, path)
                    default:
                        throw ConfigurationError(
                            key: path,
                            reason: "unknown topic role (expected sends, definitions, fcm, apns, analytics, deadLetters, timers, tokens)"
                        )
                    }
                }
            case "processing":
                for (key, item) in try Self.object(value, "processing") {
                    let path = "processing.\(key)"
                    // The key is checked before its value: a misspelt key is reported as such, whatever its value.
                    func number() throws(ConfigurationError) -> Int { try Self.positiveInteger(item, path) }
                    switch key {
                    case "maxInFlightPerPartition": maxInFlightPerPartition = try number()
                    case "drainTimeoutSeconds": drainTimeout = .seconds(try number())
                    case "retryBackoffMilliseconds": retryBackoff = .milliseconds(try number())
                    case "maxRetryBackoffSeconds": maxRetryBackoff = .seconds(try number())
                    case "messageTimeoutSeconds": messageTimeout = .seconds(try Self.nonNegativeInteger(item, path))
                    case "progressLogSeconds": progressLogInterval = .seconds(try Self.nonNegativeInteger(item, path))
                    case "groupRefusalSeconds": groupRefusalTimeout = .seconds(try number())
                    default:
                        throw ConfigurationError(
                            key: path,
                            reason: "unknown key (expected maxInFlightPerPartition, drainTimeoutSeconds, retryBackoffMilliseconds, maxRetryBackoffSeconds, messageTimeoutSeconds, progressLogSeconds, groupRefusalSeconds)"
                        )
                    }
                }
            case "sinks":
                try sinks.apply(sinksSection: try Self.object(value, "sinks"))
            case "fcm":
                try sinks.fcm.apply(try Self.object(value, "fcm"))
            case "apns":
                try sinks.apns.apply(try Self.object(value, "apns"))
            case "$comment":
                continue
            default:
                throw ConfigurationError(key: section, reason: "unknown section (expected kafka, topics, processing, sinks, fcm, apns)")
            }
        }
    }

    /// The effective configuration as JSON, with secret values masked (for `--print-config`).
    public func describedAsJSON() -> JSONValue {
        func masked(_ properties: [String: String]) -> JSONValue {
            var object = JSONObject()
            for (key, value) in properties.sorted(by: { $0.key < $1.key }) {
                object[key] = .string(Self.isSecret(key) ? "****" : value)
            }
            return .object(object)
        }
        let kafka: JSONObject = [
            "bootstrapServers": .string(bootstrapServers.joined(separator: ",")),
            "groupId": .string(groupID),
            "properties": masked(kafkaProperties),
            "consumerProperties": masked(consumerProperties),
            "producerProperties": masked(producerProperties),
        ]
        let topicObject: JSONObject = [
            "sends": .string(topics.sends), "definitions": .string(topics.definitions), "fcm": .string(topics.fcm),
            "apns": .string(topics.apns), "analytics": .string(topics.analytics), "deadLetters": .string(topics.deadLetters),
            "timers": .string(topics.timers), "tokens": .string(topics.tokens),
        ]
        let processing: JSONObject = [
            "maxInFlightPerPartition": .int(maxInFlightPerPartition),
            "drainTimeoutSeconds": .int(Int(drainTimeout.components.seconds)),
            "retryBackoffMilliseconds": .int(Int(retryBackoff.components.seconds * 1000 + retryBackoff.components.attoseconds / 1_000_000_000_000_000)),
            "maxRetryBackoffSeconds": .int(Int(maxRetryBackoff.components.seconds)),
            "messageTimeoutSeconds": .int(Int(messageTimeout.components.seconds)),
            "progressLogSeconds": .int(Int(progressLogInterval.components.seconds)),
            "groupRefusalSeconds": .int(Int(groupRefusalTimeout.components.seconds)),
        ]
        return [
            "kafka": .object(kafka), "topics": .object(topicObject), "processing": .object(processing),
            "sinks": sinks.describedAsJSON(), "fcm": sinks.fcm.describedAsJSON(), "apns": sinks.apns.describedAsJSON(),
        ]
    }

    /// Whether a librdkafka property holds a secret (passwords, keys, tokens).
    public static func isSecret(_ property: String) -> Bool {
        let name = property.lowercased()
        return ["password", "secret", "jaas", "token", "key.pem", "keystore", "credentials", "oauthbearer.config"]
            .contains { name.contains($0) }
    }

    static func object(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> JSONObject {
        guard let object = value.objectValue else { throw ConfigurationError(key: path, reason: "expected an object, found \(value.typeDescription)") }
        return object
    }

    static func string(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> String {
        guard let text = value.stringValue else { throw ConfigurationError(key: path, reason: "expected a string, found \(value.typeDescription)") }
        return text
    }

    /// An endpoint's URL: `http` or `https` with a host (a sink would otherwise fail every request, as `unavailable`,
    /// without naming the key).
    static func url(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> String {
        let text = try string(value, path)
        guard let url = URLComponents(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), !(url.host ?? "").isEmpty else {
            throw ConfigurationError(key: path, reason: "expected an http or https URL with a host, found '\(text)'")
        }
        return text
    }

    /// A consumer group or topic name: a string, not empty (librdkafka would refuse it later without naming the key).
    static func name(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> String {
        let text = try string(value, path)
        guard !text.isEmpty else { throw ConfigurationError(key: path, reason: "expected a name, found an empty string") }
        return text
    }

    private static func stringMap(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> [String: String] {
        var result: [String: String] = [:]
        for (key, item) in try object(value, path) {
            switch item {
            case .string(let text): result[key] = text
            case .int(let number): result[key] = String(number)
            case .double(let number): result[key] = String(number)  // librdkafka reads some as decimals (`linger.ms`)
            case .bool(let flag): result[key] = flag ? "true" : "false"
            default: throw ConfigurationError(key: "\(path).\(key)", reason: "expected a string, number or boolean, found \(item.typeDescription)")
            }
        }
        return result
    }

    /// The largest number a setting takes: seconds become librdkafka's milliseconds, which are 32-bit (24.8 days);
    /// no count or duration here is sensible beyond it, and larger ones overflowed when converted.
    static let largestSetting = Int(Int32.max) / 1_000

    /// A value found where a whole number belongs, as written: `1000.0` and `1e3` are read as doubles, whose JSON
    /// text (`1000`) would make the error contradict itself.
    static func found(_ value: JSONValue) -> String {
        if case .double(let number) = value {
            // A whole number beyond 64 bits is read as a `Double` too: written without a fraction, it is only too large.
            if number.rounded() == number, abs(number) >= 0x1p63 { return "\(number), a number too large" }
            return "\(number), a number with a fraction or an exponent"
        }
        return value.jsonString
    }

    static func nonNegativeInteger(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> Int {
        guard case .int(let number) = value, (0...largestSetting).contains(number) else {
            throw ConfigurationError(key: path, reason: "expected 0 or a positive integer up to \(largestSetting), found \(found(value))")
        }
        return number
    }

    static func positiveInteger(_ value: JSONValue, _ path: String) throws(ConfigurationError) -> Int {
        guard case .int(let number) = value, (1...largestSetting).contains(number) else {
            throw ConfigurationError(key: path, reason: "expected a positive integer up to \(largestSetting), found \(found(value))")
        }
        return number
    }
}

import Foundation
