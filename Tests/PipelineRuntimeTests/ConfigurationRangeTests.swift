import KafkaClient
import PipelineCore
import PipelineRuntime
import PushSinks
import Testing

/// Durations become librdkafka's 32-bit milliseconds, or a `Duration`'s milliseconds: a huge value crashed the process
/// with an arithmetic overflow (status 132), even with `--print-config`, and a merely large one failed in librdkafka's
/// words without the key.
@Suite("Configuration: numbers too large for a setting")
struct ConfigurationRangeTests {
    @Test(
        "a number beyond the largest setting is refused at load, naming the key",
        arguments: [
            "processing.messageTimeoutSeconds", "processing.drainTimeoutSeconds", "processing.maxInFlightPerPartition", "processing.progressLogSeconds",
            "processing.groupRefusalSeconds",
            "sinks.retry.deadlineSeconds", "fcm.requestTimeoutSeconds", "apns.requestTimeoutSeconds",
        ]
    )
    func hugeNumbersAreRefused(key: String) throws {
        let parts = key.split(separator: ".").map(String.init)
        let value = "10000000000000000"
        let json = parts.reversed().reduce(value) { inner, part in #"{"\#(part)": \#(inner)}"# }
        let file = try #require(try JSONValue(parsing: Array(json.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self, "\(json)") {
            try PipelineConfiguration.load(file: file, environment: [:])
        }
        #expect(error?.key == key, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
        #expect(error?.reason.contains("up to 2147483") == true, "\(json): \(error.map(String.init(describing:)) ?? "no error")")
    }

    /// An operator's trial: 99999999999999999999 (more than 64 bits, read as a `Double`) was said to have "a fraction or
    /// an exponent".
    @Test("a whole number beyond 64 bits is refused as too large")
    func beyondSixtyFourBitsIsTooLarge() throws {
        let file = try #require(try JSONValue(parsing: Array(#"{"processing": {"progressLogSeconds": 99999999999999999999}}"#.utf8)).objectValue)
        let error = #expect(throws: ConfigurationError.self) { try PipelineConfiguration.load(file: file, environment: [:]) }
        #expect(error?.reason == "expected 0 or a positive integer up to 2147483, found 1e+20, a number too large", "\(String(describing: error))")
    }

    /// Found by review: `1000.0` was refused as "expected a positive integer …, found 1000".
    @Test("a whole number written with a fraction or an exponent is refused as written")
    func fractionIsNamed() throws {
        for written in ["1000.0", "1e3"] {
            let file = try #require(try JSONValue(parsing: Array(#"{"processing": {"maxInFlightPerPartition": \#(written)}}"#.utf8)).objectValue)
            let error = #expect(throws: ConfigurationError.self, "\(written)") {
                try PipelineConfiguration.load(file: file, environment: [:])
            }
            #expect(error?.key == "processing.maxInFlightPerPartition")
            #expect(error?.reason.contains("found 1000.0, a number with a fraction or an exponent") == true, "\(String(describing: error))")
        }
    }

    @Test("the largest setting is accepted: librdkafka takes it in milliseconds")
    func largestIsAccepted() throws {
        let file = try #require(try JSONValue(parsing: Array(#"{"processing": {"messageTimeoutSeconds": 2147483}}"#.utf8)).objectValue)
        let configuration = try PipelineConfiguration.load(file: file, environment: [:])
        #expect(configuration.messageTimeout == .seconds(2_147_483))
        var producer = KafkaProducerConfiguration(bootstrapServers: ["localhost:9092"])
        producer.messageTimeout = configuration.messageTimeout
        #expect(producer.librdkafkaProperties.last { $0.key == "message.timeout.ms" }?.value == "2147483000")
    }

    /// Set in code, past the loader's check, a huge duration is converted saturating instead of trapping.
    @Test("durations set in code beyond any millisecond count are converted saturating, not with a crash")
    func hugeDurationsInCodeDoNotCrash() throws {
        var configuration = PipelineConfiguration(bootstrapServers: ["localhost:9092"])
        configuration.messageTimeout = .seconds(Int64.max / 10)
        configuration.sinks.retry.deadline = .seconds(Int64.max / 10)
        var producer = KafkaProducerConfiguration(bootstrapServers: ["localhost:9092"])
        producer.messageTimeout = configuration.messageTimeout
        #expect(producer.librdkafkaProperties.last { $0.key == "message.timeout.ms" }?.value == String(Int64.max))
        let described = configuration.describedAsJSON()
        #expect(described.objectValue?["sinks"]?.objectValue?["retry"]?.objectValue?["deadlineSeconds"] == .int(Int.max / 1000))
    }
}
