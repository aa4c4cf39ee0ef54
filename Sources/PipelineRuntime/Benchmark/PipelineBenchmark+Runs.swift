import Foundation
import KafkaClient
import Logging
import PipelineCore
import Synchronization

extension PipelineBenchmark {
    /// The limit: our Kafka layer consuming the events and producing the same bytes to a payload topic plus one
    /// ~200-byte analytics record each, committing after acknowledgement, with no decoding or rendering.
    public func relay() async throws -> RunResult {
        let topics = try topics("relay")
        let counters = RelayCounters()
        let processed = counters.processed
        let latencies = counters.latencies
        let analyticsValue = Array(String(repeating: "a", count: 200).utf8)
        let total = events.count
        var consumerConfiguration = KafkaConsumerConfiguration(bootstrapServers: [cluster.bootstrapServers], groupID: "bench-relay")
        consumerConfiguration.properties = Self.consumerProperties
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: logger)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: [cluster.bootstrapServers]), logger: logger)
        try consumer.subscribe(topics: [topics.sends])
        let trackers = Locked([KafkaTopicPartition: PartitionProgress]())

        let rates = try await measure("relay", processed: { processed.withLock { $0 } }) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await feed(topics.sends) { processed.withLock { $0 } } }
                group.addTask {
                    // Stores a partition's position each time it advances.
                    let completion = EventCompletion { tracker in
                        guard let position = tracker.completedPosition else { return }
                        try? consumer.storeOffsets([
                            KafkaTopicPartitionOffset(topic: tracker.partition.topic, partition: tracker.partition.partition, offset: position)
                        ])
                    }
                    var iterator = consumer.messages.makeAsyncIterator()
                    var read = 0
                    while read < total, let batch = try await iterator.nextBatch() {
                        for message in batch {
                            read += 1
                            let tracker = trackers.withLock { trackers in
                                if let existing = trackers[message.topicPartition] { return existing }
                                let created = PartitionProgress(partition: message.topicPartition, completion: completion)
                                trackers[message.topicPartition] = created
                                return created
                            }
                            _ = tracker.begin(offset: message.offset)
                            let ticket = EventTicket(tracker: tracker, offset: message.offset)
                            ticket.add(2)
                            // The layer's cheapest way to hear of a record: an object per record (see
                            // KafkaDeliveryReceiver), as the pipeline's output sender uses it.
                            try await Self.enqueue(
                                producer,
                                KafkaProducerRecord(topic: topics.fcm, key: message.key, value: message.value),
                                RelayAcknowledgement(ticket: ticket, counters: counters)
                            )
                            try await Self.enqueue(
                                producer,
                                KafkaProducerRecord(topic: topics.analytics, key: message.key, value: analyticsValue),
                                RelayAcknowledgement(ticket: ticket, counters: counters, countsEvent: true, sourceTimestamp: message.timestamp)
                            )
                            ticket.finishUnit()
                        }
                    }
                    // Failed records end the wait too (the run is then not accounted).
                    while processed.withLock({ $0 }) + counters.failed.withLock({ $0 }) < total {
                        try await Task.sleep(for: .milliseconds(1))
                    }
                }
                // The first failure (the feeder's) ends the run at once and cancels the rest.
                while try await group.next() != nil {}
            }
        }
        try? await consumer.commit()
        await consumer.close()
        await producer.close()
        // Latency after the warm-up, like the rate: the first events wait for the group join.
        let sorted = latencies.withLock { $0 }.dropFirst(warmUp).sorted()
        let done = processed.withLock { $0 }
        let failed = counters.failed.withLock { $0 }
        return RunResult(
            name: "relay",
            events: done,
            eventsPerSecond: rates.rate,
            p50Milliseconds: Self.percentile(sorted, 0.5),
            p99Milliseconds: Self.percentile(sorted, 0.99),
            cpuSecondsPer1000: rates.cpuPer1000,
            peakRSSMegabytes: rates.peakRSS,
            isAccounted: done == total && failed == 0,
            accounting: "\(done) of \(total) analytics records acknowledged, \(failed) records failed"
        )
    }

    /// The real `run` path with all its guarantees, then the accounting check: every event exactly one terminal
    /// outcome on the analytics topic.
    public func pipeline() async throws -> RunResult {
        let topics = try topics("pipeline")
        var configuration = PipelineConfiguration(bootstrapServers: [cluster.bootstrapServers])
        configuration.topics = topics
        configuration.groupID = "bench-pipeline"
        configuration.consumerProperties = Self.consumerProperties
        let statistics = PipelineStatistics(recordsLatency: true)
        let pipeline = CampaignPipeline(configuration: configuration, registry: registry, statistics: statistics, logger: logger)
        let total = events.count
        let processed: @Sendable () -> Int = { statistics.outcomeCount }
        let rates = try await measure("pipeline", processed: processed) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await feed(topics.sends, processed: processed) }
                group.addTask {
                    try await pipeline.run()
                    let done = processed()
                    if done < total { throw PipelineBenchmarkError("the pipeline stopped after \(done) of \(total) events") }
                }
                group.addTask {
                    // Also when cancelled (the feeder failed, or the run stalled): the pipeline then stops too.
                    defer { pipeline.stop() }
                    while processed() < total { try await Task.sleep(for: .milliseconds(10)) }
                }
                // The first failure ends the run at once and cancels the rest.
                while try await group.next() != nil {}
            }
        }
        let snapshot = statistics.snapshot
        let sorted = snapshot.latenciesMilliseconds.dropFirst(warmUp).sorted()
        let (isAccounted, accounting) = try await account(topics.analytics, expected: total)
        return RunResult(
            name: "pipeline",
            events: snapshot.totalIn,
            eventsPerSecond: rates.rate,
            p50Milliseconds: Self.percentile(sorted, 0.5),
            p99Milliseconds: Self.percentile(sorted, 0.99),
            cpuSecondsPer1000: rates.cpuPer1000,
            peakRSSMegabytes: rates.peakRSS,
            isAccounted: isAccounted,
            accounting: accounting
        )
    }

    /// Reads the analytics topic: exactly one terminal outcome for each event's message id, and none for anything
    /// else. A timer's expiry is terminal only for an event that has no other outcome (a countdown over before the
    /// event was read); after a delivery it is not.
    private func account(_ topic: String, expected: Int) async throws -> (Bool, String) {
        // A small prefetch: the accounting is not timed, and librdkafka's default (64 MiB of records read ahead)
        // made it the process's peak, 50-60 MiB above the runs it checks.
        let properties = ["queued.max.messages.kbytes": "4096"]
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(bootstrapServers: [cluster.bootstrapServers], groupID: nil, properties: properties),
            logger: logger
        )
        let count = try await consumer.partitionCount(topic: topic)
        var remaining: [Int32: Int64] = [:]
        for partition in 0..<count {
            let marks = try await consumer.watermarks(topic: topic, partition: partition)
            if marks.low > 0 {
                await consumer.close()
                return (false, "the broker dropped \(marks.low) analytics records of partition \(partition)")
            }
            if marks.high > 0 { remaining[partition] = marks.high }
        }
        try consumer.assign((0..<count).map { KafkaTopicPartitionOffset(topic: topic, partition: $0, offset: KafkaOffset.beginning) })
        var perMessage: [String: Int] = [:]
        var timerExpiries: Set<String> = []
        var unreadable = 0
        var iterator = consumer.messages.makeAsyncIterator()
        while !remaining.isEmpty, let batch = try await iterator.nextBatch() {
            for message in batch {
                if let end = remaining[message.partition], message.offset + 1 >= end { remaining[message.partition] = nil }
                guard let event = try? AnalyticsEvent(json: message.value ?? []) else {
                    unreadable += 1
                    continue
                }
                if event.kind == .expired, event.cause == .timer {
                    timerExpiries.insert(event.identity.messageId)
                    continue
                }
                perMessage[event.identity.messageId, default: 0] += 1
            }
        }
        await consumer.close()
        for messageId in timerExpiries where perMessage[messageId] == nil { perMessage[messageId] = 1 }
        let repeated = perMessage.values.filter { $0 > 1 }.count
        // Each event's id looked up in turn: a set of all of them would hold another 200,000 strings.
        let accounted = (0..<expected).filter { events.messageId(at: $0).map { perMessage[$0] != nil } ?? false }.count
        let unexpected = perMessage.count - accounted
        let isAccounted = accounted == expected && repeated == 0 && unexpected == 0 && unreadable == 0
        return (
            isAccounted,
            "\(accounted) of \(expected) events have a terminal outcome (\(repeated) repeated, \(unexpected) for no event, \(unreadable) unreadable)"
        )
    }
}

/// The relay's counters: events whose analytics record is acknowledged, their latencies, and records that failed
/// (the run is then not accounted).
final class RelayCounters: Sendable {
    let processed = Locked(0)
    let latencies = Locked([Double]())
    let failed = Locked(0)
}

/// The acknowledgement of one relayed record: completes a unit of its event (storing the partition's position when
/// that advanced it); the event's analytics record also counts the event and its latency.
final class RelayAcknowledgement: KafkaDeliveryReceiver, @unchecked Sendable {
    // Immutable after init: safe to send.
    let ticket: EventTicket
    let counters: RelayCounters
    let sourceTimestamp: Date?

    let countsEvent: Bool

    /// - Parameters:
    ///   - counters: where failures are counted, and (`countsEvent`) the event and its latency.
    ///   - countsEvent: whether this record is the event's analytics record.
    init(ticket: EventTicket, counters: RelayCounters, countsEvent: Bool = false, sourceTimestamp: Date? = nil) {
        self.ticket = ticket
        self.counters = counters
        self.countsEvent = countsEvent
        self.sourceTimestamp = sourceTimestamp
    }

    override func deliveryReported(_ result: Result<KafkaDeliveryReport, KafkaError>) {
        guard case .success = result else {
            // Not committed past, and the run is not accounted.
            counters.failed.withLock { $0 += 1 }
            return
        }
        ticket.finishUnit()
        guard countsEvent else { return }
        if let sourceTimestamp { counters.latencies.withLock { $0.append(Date().timeIntervalSince(sourceTimestamp) * 1000) } }
        counters.processed.withLock { $0 += 1 }
    }
}
