import Foundation
import KafkaClient
import Testing

/// kcat, an independent Kafka client, reads what we write and writes what we read.
@Suite("Interoperability with kcat")
struct KafkaInteropTests {
    @Test("a record produced by our producer is read by kcat, key, value and headers intact")
    func kcatReadsOurs() async throws {
        try await withEmbeddedKafka(topics: ["to-kcat": 1]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            _ = try await producer.send(
                KafkaProducerRecord(
                    topic: "to-kcat",
                    key: Array("user-42".utf8),
                    value: Array(#"{"hello":"wörld"}"#.utf8),
                    headers: [KafkaHeader(key: "messageId", string: "m-1"), KafkaHeader(key: "template", string: "basic")]
                )
            )
            await producer.close()
            let output = try await runKcat(["-C", "-b", kafka.bootstrapServers, "-t", "to-kcat", "-o", "beginning", "-e", "-q", "-f", "%k|%s|%h\n"])
            #expect(output == #"user-42|{"hello":"wörld"}|messageId=m-1,template=basic"# + "\n")
        }
    }

    @Test("a record produced by kcat is read by our consumer")
    func oursReadsKcat() async throws {
        try await withEmbeddedKafka(topics: ["from-kcat": 1]) { kafka in
            _ = try await runKcat(
                ["-P", "-b", kafka.bootstrapServers, "-t", "from-kcat", "-K", "\t", "-H", "origin=kcat"],
                input: "user-7\t{\"n\":1}\nuser-8\t{\"n\":2}\n"
            )
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
            try consumer.subscribe(topics: ["from-kcat"])
            let messages = try await collect(2, from: consumer)
            await consumer.close()
            #expect(messages.map { String(decoding: $0.key ?? [], as: UTF8.self) } == ["user-7", "user-8"])
            #expect(messages.map(\.valueString) == [#"{"n":1}"#, #"{"n":2}"#])
            #expect(messages.allSatisfy { $0.header("origin") == "kcat" })
        }
    }
}

/// Runs kcat and returns its standard output; fails the test when kcat is missing or fails. It waits on a thread of
/// its own: not on a cooperative thread other tests need, nor on a dispatch queue, whose threads on Linux are the
/// cooperative pool's too.
func runKcat(_ arguments: [String], input: String? = nil) async throws -> String {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runKcatBlocking(arguments, input: input) })
        }
    }
}

private func runKcatBlocking(_ arguments: [String], input: String?) throws -> String {
    let path = ["/usr/bin/kcat", "/usr/local/bin/kcat"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let path else {
        throw TestTimeout(description: "kcat is not installed: `make test` installs it (apt-get install -y kcat)")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    let stdin = Pipe()
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw TestTimeout(description: "kcat exited \(process.terminationStatus): \(String(decoding: errorData, as: UTF8.self))")
    }
    return String(decoding: data, as: UTF8.self)
}
