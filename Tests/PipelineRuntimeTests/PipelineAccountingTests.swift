import BasicTemplate
import Foundation
import KafkaClient
import Logging
import PipelineCore
import PipelineRuntime
import Testing
import TestSupport

@Suite("The streaming pipeline accounts for every event")
struct PipelineAccountingTests {
    /// Found by review: each of 10,000 reserved `custom` keys added its problem to the rejection's detail (1.2 MB),
    /// which the dead letter and the `push.rejected` record carried; both were refused for their size, the outcome
    /// was retried for ever, and the partition's commit never moved again.
    @Test("an event with thousands of problems is rejected with a cut detail, its dead letter keeps it whole, and its partition goes on")
    func thousandsOfProblems() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            var poison = factory.event("basic-fcm", id: "poison", recipient: "user-P")
            var custom = JSONObject()
            for index in 0..<10_000 { custom[String(format: "gcm%05d", index)] = .string("") }
            poison["custom"] = .object(custom)
            let poisonBytes = JSONValue.object(poison).encoded()
            let after = JSONValue.object(factory.event("basic-fcm", id: "after", recipient: "user-P")).encoded()
            try await produce([("user-P", poisonBytes), ("user-P", after)], to: configuration.topics.sends, kafka: kafka)
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await runUntilIdle(pipeline)

            let outcomes = try await analyticsRecords(configuration, kafka: kafka).map(\.event)
            let rejected = try #require(outcomes.first { $0.identity.eventId == "poison" })
            #expect(rejected.kind == .rejected)
            let detail = try #require(rejected.reasonDetail)
            #expect(detail.utf8.count <= AnalyticsEvent.detailLimit)
            #expect(detail.hasPrefix("custom: key 'gcm00000' is reserved by FCM"), "\(detail.prefix(200))")
            #expect(detail.hasSuffix("bytes in all)"), "\(detail.suffix(100))")
            #expect(outcomes.first { $0.identity.eventId == "after" }?.kind == .delivered, "the partition goes on")
            #expect(outcomes.count == 2)
            let deadLetters = try await readAll(configuration.topics.deadLetters, kafka: kafka)
            #expect(deadLetters.count == 1)
            #expect(deadLetters.first?.value == poisonBytes, "the original, whole")
        }
    }

    /// Found by review: a producer that keys sends otherwise than by recipient id, or not at all, loses the contract's
    /// per-recipient order without a word; the pipeline now says so (each send is still delivered).
    @Test("a send not keyed by its recipient id is delivered with a warning")
    func sendsKeyedOtherwiseAreWarnedAbout() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            for (id, key) in [("keyed", "user-K"), ("other-key", "campaign-7"), ("no-key", nil)] {
                let event = JSONValue.object(factory.event("basic-fcm", id: id, recipient: "user-K")).encoded()
                _ = try await producer.send(KafkaProducerRecord(topic: configuration.topics.sends, key: key.map { Array($0.utf8) }, value: event))
            }
            await producer.close()
            let logs = LogRecorder()
            try await runUntilIdle(CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: logs.logger(level: .info)))
            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            #expect(outcomes.map(\.kind) == [.delivered, .delivered, .delivered])
            let warnings = logs.lines.filter { $0.message.hasPrefix("Send not keyed by its recipient id") }
            #expect(warnings.map { "\($0.metadata["eventId"] ?? "")=\($0.metadata["key"] ?? "")" } == ["other-key=campaign-7", "no-key=none"])
            #expect(warnings.allSatisfy { $0.level == .warning && $0.metadata["recipientId"] == "user-K" })
        }
    }

    /// Found by a plugin author's review: a render's warnings (a content key the template does not read, a `custom`
    /// key left out) reached `render` but not `run`, so a campaign's misspelt key went unseen in production.
    @Test("an event rendered with warnings is sent, logged with its warnings and counted; a rejection's log names its template and warnings")
    func renderWarningsAreLoggedAndCounted() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let clean = factory.event("basic-fcm", id: "clean", recipient: "user-W")
            // Twelve: ten are logged in full, the two others counted in a line as the pipeline stops.
            let misspelt = (0..<12).map { clean.setting(["eventId"], to: .string("misspelt-\($0)")).setting(["content", "subtitel"], to: "oops") }
            let rejected = clean.setting(["eventId"], to: "rejected").setting(["content", "title"], to: nil).setting(["content", "tittle"], to: "oops")
            try await produce(([clean] + misspelt + [rejected]).map { ("user-W", JSONValue.object($0).encoded()) }, to: configuration.topics.sends, kafka: kafka)
            let logs = LogRecorder()
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: logs.logger(level: .info))
            try await runUntilIdle(pipeline)

            let outcomes = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            // A rejection's outcome can be written before the deliveries' (they wait for their sink).
            #expect(outcomes.map { "\($0.identity.eventId ?? "-")=\($0.kind.rawValue)" }.sorted()
                == (["clean=push.delivered", "rejected=push.rejected"] + (0..<12).map { "misspelt-\($0)=push.delivered" }).sorted())
            let warned = logs.lines.filter { $0.message == "Event rendered with warnings" }
            #expect(warned.count == 10)
            #expect(warned.allSatisfy { $0.level == .warning })
            #expect(warned.first?.metadata["eventId"] == "misspelt-0")
            #expect(warned.first?.metadata["template"] == "basic")
            #expect(warned.first?.metadata["warnings"] == "content.subtitel: not a field of template 'basic'; ignored")
            #expect(logs.lines.filter { $0.message.hasPrefix("Event rendered with warnings:") }.map(\.message) == ["Event rendered with warnings: 2 more not logged"])
            let rejection = try #require(logs.lines.first { $0.message == "Event rejected" })
            #expect(rejection.metadata["template"] == "basic")
            #expect(rejection.metadata["warnings"] == "content.tittle: not a field of template 'basic'; ignored")
            #expect(pipeline.statistics.snapshot.eventsWithWarnings == ["basic/fcm": 12], "the rejected event's warnings are not counted: it was not sent")
            let stopped = try #require(logs.lines.first { $0.message == "Pipeline stopped" })
            #expect(stopped.metadata["renderedWithWarnings"] == "12")
        }
    }

    /// Found by review: the original's headers of the names the pipeline adds were kept before them, so a reader
    /// taking the first `error.code` got the original's (a dead letter sent to the sends topic again carries its
    /// last rejection's).
    @Test("a dead letter's error and source headers replace the original's of the same names; its other headers are kept")
    func deadLetterHeadersReplaceTheOriginals() async throws {
        try await withPipelineCluster(partitions: 1) { kafka, configuration in
            let factory = try EventFactory()
            let broken = JSONValue.object(factory.event("basic-fcm", id: "redriven", recipient: "user-D").setting(["content", "title"], to: nil))
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [kafka.bootstrapServers]), logger: testLogger)
            _ = try await producer.send(
                KafkaProducerRecord(
                    topic: configuration.topics.sends,
                    key: Array("user-D".utf8),
                    value: broken.encoded(),
                    headers: [
                        KafkaHeader(key: "trace", string: "t-1"),
                        KafkaHeader(key: "error.code", string: "invalid_json"),
                        KafkaHeader(key: "error.detail", string: "an earlier rejection"),
                        KafkaHeader(key: "source.offset", string: "99"),
                        KafkaHeader(key: "messageId", string: "earlier"),
                        KafkaHeader(key: "source.system", string: "crm"),
                    ]
                )
            )
            await producer.close()
            try await runUntilIdle(CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger))
            let deadLetter = try #require(try await readAll(configuration.topics.deadLetters, kafka: kafka).first)
            let rejected = try #require(try analytics(try await readAll(configuration.topics.analytics, kafka: kafka)).first)
            #expect(deadLetter.headers.map(\.key) == [
                "trace", "source.system", "messageId", "error.code", "error.detail", "source.topic", "source.partition", "source.offset",
            ])
            #expect(deadLetter.header("error.code") == "missing_field")
            #expect(deadLetter.header("source.offset") == "0")
            #expect(deadLetter.header("messageId") == rejected.identity.messageId)
            #expect(deadLetter.header("trace") == "t-1" && deadLetter.header("source.system") == "crm")
        }
    }

    @Test("mixed events: one terminal outcome each, broken ones in the DLQ naming the field, payloads as rendered")
    func mixedEvents() async throws {
        try await withPipelineCluster(partitions: 12) { kafka, configuration in
            let factory = try EventFactory()
            let total = Int(ProcessInfo.processInfo.environment["PIPELINE_TEST_EVENTS"] ?? "20000")!
            var inputs: [(key: String, value: [UInt8])] = []
            var brokenFields: [String: String] = [:]
            var expectedPayloads: [String: [UInt8]] = [:]
            for index in 0..<total {
                // Seconds of work in a debug build: let the parallel run's other tests take turns on the pool.
                if index % 500 == 0 { await Task.yield() }
                let id = "event-\(index)"
                let recipient = "user-\(index % 500)"
                if index % 20 == 7 {
                    let broken = factory.broken(index / 20, id: id, recipient: recipient)
                    inputs.append((recipient, broken.bytes))
                    brokenFields[id] = broken.field
                } else {
                    let kind = EventFactory.kinds[index % EventFactory.kinds.count]
                    let bytes = JSONValue.object(factory.event(kind, id: id, recipient: recipient)).encoded()
                    inputs.append((recipient, bytes))
                    // What `campaign-pipeline render` gives for the same event.
                    if case .rendered(let notification) = builtinRegistry.render(eventBytes: bytes) {
                        expectedPayloads[notification.messageId] = notification.payloadBytes
                    }
                }
            }
            try await produce(inputs, to: configuration.topics.sends, kafka: kafka)

            weak var finished: CampaignPipeline?
            let statistics: PipelineStatistics
            let logs = LogRecorder()
            do {
                // `basic` registered a second time (the same plugin: every outcome stays what `render` gives), which
                // the pipeline reports as it starts.
                let registry = builtinRegistry.registering(BasicTemplate())
                let pipeline = CampaignPipeline(configuration: configuration, registry: registry, logger: logs.logger(level: .info))
                finished = pipeline
                statistics = pipeline.statistics
                try await pipeline.run()
            }
            // Nothing the run made keeps the pipeline. (Its trackers, which hold it through the run's completion, also
            // go with the consumer's final revocation here; `ReplayTests.replayMatchesOriginal`, whose partitions are
            // never revoked, is the check that the run itself lets them go.)
            #expect(finished == nil, "the pipeline is released once its run is over")

            let events = try analytics(try await readAll(configuration.topics.analytics, kafka: kafka))
            // Events whose JSON cannot be read have no readable id: their outcome is found through the
            // message id on their dead-letter record.
            let deadLetters = try await readAll(configuration.topics.deadLetters, kafka: kafka)
            var eventIdByMessageId: [String: String] = [:]
            for record in deadLetters {
                if let id = brokenFields.keys.first(where: { record.valueString.contains("\"\($0)\"") }) {
                    eventIdByMessageId[try #require(record.header("messageId"))] = id
                }
            }
            var terminalByEvent: [String: [AnalyticsEvent]] = [:]
            for event in events {
                let id = try #require(event.identity.eventId ?? eventIdByMessageId[event.identity.messageId])
                terminalByEvent[id, default: []].append(event)
            }
            #expect(terminalByEvent.count == total, "every event has an outcome")
            let multiple = terminalByEvent.filter { $0.value.count != 1 }
            #expect(multiple.isEmpty, "exactly one terminal outcome each; \(multiple.count) had more")

            // Broken events: rejected, in the DLQ with the original bytes, the reason naming the field, the source
            // record's place, and the code of the event's `push.rejected`.
            #expect(deadLetters.count == brokenFields.count)
            let sends = try await readAll(configuration.topics.sends, kafka: kafka)
            let rejectedByMessageId = Dictionary(events.filter { $0.kind == .rejected }.map { ($0.identity.messageId, $0) }) { first, _ in first }
            for record in deadLetters {
                let code = try #require(record.header("error.code"))
                let detail = try #require(record.header("error.detail"))
                let messageId = try #require(record.header("messageId"))
                let rejected = try #require(rejectedByMessageId[messageId], "the dead letter's event was rejected")
                #expect(code == rejected.reasonCode, "the dead letter's code is its push.rejected's")
                #expect(record.header("source.topic") == configuration.topics.sends)
                #expect(record.header("origin") == "test", "the original headers are kept")
                let source = try #require(sends.first { $0.value == record.value }, "the dead letter holds a record's original bytes")
                #expect(record.header("source.partition") == "\(source.partition)")
                #expect(record.header("source.offset") == "\(source.offset)")
                let id = brokenFields.keys.first { record.valueString.contains("\"\($0)\"") }
                if let id, let field = brokenFields[id], field != "$" {
                    #expect(detail.contains(field), "\(id): '\(detail)' should name \(field)")
                }
            }
            for (id, field) in brokenFields {
                let outcome = try #require(terminalByEvent[id]?.first)
                #expect(outcome.kind == .rejected, "\(id)")
                if field != "$" { #expect(outcome.reasonDetail?.contains(field) == true, "\(id): \(outcome.reasonDetail ?? "")") }
            }

            // Payloads: exactly what render gives.
            let payloads = try await readAll(configuration.topics.fcm, kafka: kafka) + (try await readAll(configuration.topics.apns, kafka: kafka))
            #expect(payloads.count == expectedPayloads.count)
            for record in payloads {
                let messageId = try #require(record.header("messageId"))
                #expect(record.value == expectedPayloads[messageId], "payload of \(messageId)")
            }
            let delivered = events.filter { $0.kind == .delivered }
            #expect(delivered.count == expectedPayloads.count)
            #expect(Set(delivered.map(\.identity.messageId)) == Set(expectedPayloads.keys))

            let summary = statistics.snapshot
            #expect(summary.totalIn == total)
            #expect(summary.outcomes[.rejected] == brokenFields.count)
            // Every outcome's latency from its send's record timestamp, once (`campaign_pipeline_outcome_latency_seconds`).
            #expect(summary.outcomeLatency.count == total)
            #expect(summary.outcomeLatency.sum > 0 && summary.outcomeLatency.sum < Double(total) * 600, "\(summary.outcomeLatency.sum)")
            // Counted by reason code (the metrics' `campaign_pipeline_rejected_total`) as the records say.
            let rejectedCodes = Dictionary(grouping: events.filter { $0.kind == .rejected }, by: { $0.reasonCode ?? "none" }).mapValues(\.count)
            #expect(rejectedCodes.count > 1, "the broken events give several codes")
            #expect(summary.outcomeReasons[.rejected] == rejectedCodes)

            // Rejections are logged ten at a time in ten seconds; each one not logged is counted in a line that is.
            let rejectionLines = logs.lines.filter { $0.level == .warning && $0.message.hasPrefix("Event rejected") }
            let logged = rejectionLines.filter { $0.message == "Event rejected" && $0.metadata["reason"] != nil }.count
            let omitted = rejectionLines.compactMap { line in line.metadata["omittedSinceLastLogged"].flatMap { Int($0.description) } }
            #expect(logged + omitted.reduce(0, +) == brokenFields.count)
            #expect(logged < brokenFields.count / 2, "\(logged) of \(brokenFields.count) rejections logged in full")

            // A name a later registration took is logged once, at notice, as the pipeline starts.
            let overrides = logs.lines.filter { $0.message.hasPrefix("A template plugin took a name from another") }
            #expect(overrides.count == 1)
            #expect(overrides.first?.level == .notice)
            #expect(overrides.first.map { "\($0.metadata["name"] ?? "")/\($0.metadata["from"] ?? "")/\($0.metadata["to"] ?? "")" } == "basic/basic/basic")
        }
    }
}

extension KafkaConsumerMessage {
    var valueString: String { String(decoding: value ?? [], as: UTF8.self) }
}
