import Foundation
import PipelineCore
import PipelineRuntime
import PlatformSinks
import PushSinks
import TestSupport
import Testing

@Suite("Sink configuration: routes, settings, secrets")
struct SinkConfigurationTests {
    func object(_ json: String) throws -> JSONObject {
        try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
    }

    /// Found by review: `"baseUrl": "not a url"` was accepted, and every request would have failed as `unavailable`.
    @Test("an endpoint that is no http or https URL with a host is refused at load, naming the key")
    func endpointsAreURLs() throws {
        for key in ["fcm.baseUrl", "fcm.tokenUrl", "apns.baseUrl"] {
            let parts = key.split(separator: ".")
            for bad in ["not a url", "ftp://example.com", "https://", "localhost:8443"] {
                let file = try object(#"{"\#(parts[0])": {"\#(parts[1])": "\#(bad)"}}"#)
                let error = #expect(throws: ConfigurationError.self, "\(key): \(bad)") {
                    try PipelineConfiguration.load(file: file, environment: [:], checkingSinkCredentials: false)
                }
                #expect(error?.key == key)
                #expect(error?.reason == "expected an http or https URL with a host, found '\(bad)'", "\(String(describing: error))")
            }
            let good = try object(#"{"\#(parts[0])": {"\#(parts[1])": "http://127.0.0.1:8443/x"}}"#)
            _ = try PipelineConfiguration.load(file: good, environment: [:], checkingSinkCredentials: false)
        }
    }

    @Test("the file's sinks, fcm and apns sections; the environment overrides them")
    func layering() throws {
        let file = try object(
            #"""
            {
              "sinks": {"fcm": ["kafka", "fcm"], "apns": ["apns"], "retry": {"initialBackoffMilliseconds": 250, "maxBackoffSeconds": 20, "deadlineSeconds": 120, "throttledBackoffSeconds": 90}},
              "fcm": {"serviceAccountFile": "/run/secrets/fcm.json", "projectId": "p1", "concurrency": 32, "requestTimeoutSeconds": 5},
              "apns": {"environment": "sandbox", "keyId": "K1", "teamId": "T1", "privateKeyFile": "/run/secrets/apns.p8", "topic": "com.example", "tokenRefreshMinutes": 30, "concurrency": 200},
              "topics": {"tokens": "dead.tokens"}
            }
            """#
        )
        let loaded = try PipelineConfiguration.load(file: file, environment: [:])
        #expect(loaded.sinks.routes == [.fcm: ["kafka", "fcm"], .apns: ["apns"]])
        #expect(loaded.sinks.retry == RetryPolicy(initialBackoff: .milliseconds(250), maxBackoff: .seconds(20), deadline: .seconds(120), throttledBackoff: .seconds(90)))
        #expect(loaded.sinks.fcm.serviceAccount == .file(path: "/run/secrets/fcm.json"))
        #expect(loaded.sinks.fcm.projectID == "p1")
        #expect(loaded.sinks.fcm.concurrency == 32)
        #expect(loaded.sinks.fcm.connection.requestTimeout == .seconds(5))
        #expect(loaded.sinks.apns.environment == .sandbox)
        #expect(loaded.sinks.apns.effectiveBaseURL == "https://api.sandbox.push.apple.com")
        #expect(loaded.sinks.apns.privateKey == .file(path: "/run/secrets/apns.p8"))
        #expect(loaded.sinks.apns.tokenRefreshMinutes == 30)
        #expect(loaded.sinks.apns.concurrency == 200)
        #expect(loaded.topics.tokens == "dead.tokens")

        let environment = [
            "CAMPAIGN_PIPELINE_SINKS_FCM": "fcm",
            "CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT": #"{"private_key":"-----BEGIN PRIVATE KEY-----SECRET-FCM"}"#,
            "CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY": "-----BEGIN PRIVATE KEY-----SECRET-APNS",
            "CAMPAIGN_PIPELINE_APNS_KEY_ID": "K2",
            "CAMPAIGN_PIPELINE_APNS_ENVIRONMENT": "production",
        ]
        let overridden = try PipelineConfiguration.load(file: file, environment: environment)
        #expect(overridden.sinks.routes[.fcm] == ["fcm"])
        #expect(overridden.sinks.fcm.serviceAccount == .environment(name: "CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT"), "the secret stays in the environment")
        #expect(overridden.sinks.apns.privateKey == .environment(name: "CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY"))
        #expect(overridden.sinks.apns.keyID == "K2")
        #expect(overridden.sinks.apns.environment == .production)

        // The printed configuration names where secrets come from, never what they are.
        let text = String(decoding: overridden.describedAsJSON().encoded(), as: UTF8.self)
        #expect(!text.contains("SECRET-FCM") && !text.contains("SECRET-APNS"), "\(text)")
        #expect(text.contains(#""serviceAccountEnv":"CAMPAIGN_PIPELINE_FCM_SERVICE_ACCOUNT""#), "\(text)")
        #expect(text.contains(#""privateKeyEnv":"CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY""#), "\(text)")
        var inline = overridden
        inline.sinks.apns.privateKey = .value("-----BEGIN PRIVATE KEY-----INLINE")
        let inlineText = String(decoding: inline.describedAsJSON().encoded(), as: UTF8.self)
        #expect(!inlineText.contains("INLINE") && inlineText.contains(#""privateKey":"****""#), "\(inlineText)")
        // What is printed loads again to the same configuration.
        guard case .object(let printed) = overridden.describedAsJSON() else {
            Issue.record("the description is an object")
            return
        }
        let reloaded = try PipelineConfiguration.load(file: printed, environment: environment)
        #expect(reloaded.sinks == overridden.sinks)
    }

    @Test("bad sink settings are refused at load, naming the key", arguments: [
        (#"{"sinks": {"fcm": ["fcm"]}}"#, "fcm.serviceAccountFile"),
        (#"{"sinks": {"apns": ["apns"]}, "apns": {"privateKeyFile": "/k.p8", "teamId": "T", "topic": "t"}}"#, "apns.keyId"),
        (#"{"sinks": {"apns": ["apns"]}, "apns": {"keyId": "K", "teamId": "T", "topic": "t"}}"#, "apns.privateKeyFile"),
        (#"{"sinks": {"fcm": ["pigeon"]}}"#, "sinks.fcm"),
        (#"{"sinks": {"fcm": ["apns"]}}"#, "sinks.fcm"),
        (#"{"sinks": {"apns": []}}"#, "sinks.apns"),
        (#"{"sinks": {"fcm": ["kafka", "kafka"]}}"#, "sinks.fcm"),
        (#"{"sinks": {"retry": {"deadlineSeconds": 0}}}"#, "sinks.retry.deadlineSeconds"),
        (#"{"apns": {"environment": "staging"}}"#, "apns.environment"),
        (#"{"apns": {"tokenRefreshMinutes": 10}}"#, "apns.tokenRefreshMinutes"),
        (#"{"fcm": {"serviceAccount": "inline"}}"#, "fcm.serviceAccount"),
        // Found by review: a first wait longer than the longest was accepted, and silently cut to the longest.
        (#"{"sinks": {"retry": {"initialBackoffMilliseconds": 900000, "maxBackoffSeconds": 1}}}"#, "sinks.retry.initialBackoffMilliseconds"),
        (#"{"processing": {"retryBackoffMilliseconds": 600000, "maxRetryBackoffSeconds": 1}}"#, "processing.retryBackoffMilliseconds"),
    ])
    func refused(json: String, key: String) throws {
        let error = #expect(throws: ConfigurationError.self) {
            try PipelineConfiguration.load(file: try object(json), environment: [:])
        }
        #expect(error?.key == key, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
    }

    /// Found by review: a bad route from `CAMPAIGN_PIPELINE_SINKS_FCM` or `_APNS` was reported under the file's key,
    /// whose route was a good one; and a missing APNs key id, team id or topic did not name its variable.
    @Test("a bad route from the environment names its variable; missing APNs settings name theirs")
    func environmentRoutesNameTheirVariable() throws {
        let file = try object(#"{"sinks": {"fcm": ["kafka"], "apns": ["kafka"]}}"#)
        for (variable, value) in [("CAMPAIGN_PIPELINE_SINKS_FCM", "apns"), ("CAMPAIGN_PIPELINE_SINKS_APNS", "kafka,kafk")] {
            let error = #expect(throws: ConfigurationError.self) {
                try PipelineConfiguration.load(file: file, environment: [variable: value])
            }
            #expect(error?.key == variable, "\(error.map(String.init(describing:)) ?? "no error")")
        }
        let missing = #expect(throws: ConfigurationError.self) {
            try PipelineConfiguration.load(file: file, environment: ["CAMPAIGN_PIPELINE_SINKS_APNS": "apns", "CAMPAIGN_PIPELINE_APNS_PRIVATE_KEY_FILE": "/k.p8"])
        }
        #expect(missing?.key == "apns.keyId")
        #expect(missing?.reason.contains("CAMPAIGN_PIPELINE_APNS_KEY_ID") == true, "\(missing.map(String.init(describing:)) ?? "no error")")
    }

    @Test("a misspelt key is reported as unknown, whatever its value's type", arguments: [
        (#"{"processing": {"drainTimeout": "15s"}}"#, "processing.drainTimeout"),
        (#"{"topics": {"send": 7}}"#, "topics.send"),
        (#"{"sinks": {"retry": {"deadline": "5m"}}}"#, "sinks.retry.deadline"),
    ])
    func misspeltKeys(json: String, key: String) throws {
        let error = #expect(throws: ConfigurationError.self) {
            try PipelineConfiguration.load(file: try object(json), environment: [:])
        }
        #expect(error?.key == key, "\(json)")
        #expect(error?.reason.hasPrefix("unknown") == true, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
    }

    @Test("properties holding secrets are masked when the configuration is printed, the others shown")
    func secretsMasked() throws {
        let loaded = try PipelineConfiguration.load(
            file: try object(#"{"kafka": {"properties": {"sasl.password": "p1", "sasl.oauthbearer.config": "clientSecret=s3", "ssl.key.pem": "k", "acks": "all"}}}"#),
            environment: [:]
        )
        let printed = String(decoding: loaded.describedAsJSON().encoded(), as: UTF8.self)
        #expect(!printed.contains("p1") && !printed.contains("s3") && !printed.contains(#""k""#), "\(printed)")
        #expect(printed.contains(#""acks":"all""#), "\(printed)")
    }

    @Test("Kafka properties may be strings, integers, decimals or booleans; anything else is refused naming its type")
    func kafkaPropertyValues() throws {
        let loaded = try PipelineConfiguration.load(
            file: try object(#"{"kafka": {"producerProperties": {"linger.ms": 5.5, "batch.num.messages": 500, "enable.idempotence": true, "acks": "all"}}}"#),
            environment: [:]
        )
        #expect(loaded.producerProperties == ["linger.ms": "5.5", "batch.num.messages": "500", "enable.idempotence": "true", "acks": "all"])
        let error = #expect(throws: ConfigurationError.self) {
            try PipelineConfiguration.load(file: try object(#"{"kafka": {"properties": {"acks": ["all"]}}}"#), environment: [:])
        }
        #expect(error?.key == "kafka.properties.acks")
        #expect(error?.reason == "expected a string, number or boolean, found an array")
    }
}
