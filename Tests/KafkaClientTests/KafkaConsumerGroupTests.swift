import Foundation
@testable import KafkaClient
import KafkaWireTestSupport
import Synchronization
import Testing

@Suite("Consumer groups, commits and positions")
struct KafkaConsumerGroupTests {
    @Test("two consumers split a 6-partition topic; when one closes the other takes over and nothing is lost")
    func groupSplitAndTakeover() async throws {
        try await withEmbeddedKafka(topics: ["split": 6]) { kafka in
            try await produceNumbered(600, to: "split", kafka: kafka)
            let group = uniqueGroup()
            let first = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            let second = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            try first.subscribe(topics: ["split"])
            try second.subscribe(topics: ["split"])

            // Wait until the group has settled with both members holding partitions.
            let deadline = ContinuousClock.now + .seconds(30)
            while first.assignment.isEmpty || second.assignment.isEmpty || first.assignment.count + second.assignment.count != 6 {
                guard ContinuousClock.now < deadline else { throw TestTimeout(description: "group never split") }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(first.assignment.isDisjoint(with: second.assignment))
            #expect(first.assignment.union(second.assignment).count == 6)
            let secondPartitions = second.assignment

            // The second consumer reads and commits what it has, then leaves.
            var secondIterator = second.messages.makeAsyncIterator()
            var doneBySecond: [KafkaConsumerMessage] = []
            while let batch = try await secondIterator.nextBatch() {
                doneBySecond.append(contentsOf: batch)
                if doneBySecond.count >= 50 { break }
            }
            #expect(doneBySecond.allSatisfy { secondPartitions.contains($0.topicPartition) })
            try await second.commit(latestPositions(of: doneBySecond))
            await second.close()

            // The first consumer now owns all six partitions and reads everything not committed by the second.
            // Until it commits, the survivor may read its own partitions again after the rebalance
            // (at-least-once), so count distinct records.
            let events = first.events
            var received: [KafkaConsumerMessage] = []
            let needed = 600 - doneBySecond.count
            var seen: Set<String> = []
            let readDeadline = ContinuousClock.now + .seconds(60)
            var firstIterator = first.messages.makeAsyncIterator()
            while seen.count < needed, ContinuousClock.now < readDeadline, let batch = try await firstIterator.nextBatch() {
                received.append(contentsOf: batch)
                seen.formUnion(batch.map(\.valueString))
            }
            // The survivor may have read all it needed before the group moved the other partitions to it.
            let takeoverDeadline = ContinuousClock.now + .seconds(30)
            while first.assignment.count != 6, ContinuousClock.now < takeoverDeadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(first.assignment.count == 6)
            await first.close()
            var sawRevocationAndReassignment = false
            for await event in events {
                if case .partitionsAssigned(let partitions) = event, partitions.count == 6 { sawRevocationAndReassignment = true }
            }
            #expect(sawRevocationAndReassignment, "the survivor is told it was assigned all six partitions")

            let all = Set(received.map(\.valueString)).union(doneBySecond.map(\.valueString))
            #expect(all.count == 600, "every record was read by one of the two")
            let overlap = Set(received.map(\.valueString)).intersection(doneBySecond.map(\.valueString))
            #expect(overlap.isEmpty, "what the second committed is not read again")
        }
    }

    /// A member the group's coordinator forgot (a heartbeat answered UNKNOWN_MEMBER_ID, as after its session timed
    /// out while the brokers were unreachable) loses its assignment: told as `partitionsLost`, not as an ordinary
    /// revocation (nothing could be committed for them), and then assigned again as it rejoins.
    @Test("a consumer whose group membership is lost reports partitionsLost, then is assigned again under a new member id")
    func lostAssignmentIsReportedAsLost() async throws {
        try await withEmbeddedKafka(topics: ["losing": 2]) { kafka in
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
            let seen = Mutex([KafkaConsumer.Event]())
            let events = consumer.events
            let listener = Task { for await event in events { seen.withLock { $0.append(event) } } }
            #expect(consumer.memberID == "", "no member id before it joins")
            try consumer.subscribe(topics: ["losing"])
            let deadline = ContinuousClock.now + .seconds(30)
            while consumer.assignment.count != 2 {
                guard ContinuousClock.now < deadline else { throw TestTimeout(description: "never assigned") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let firstMemberID = consumer.memberID
            #expect(!firstMemberID.isEmpty)
            // The next heartbeat (API key 12) is answered UNKNOWN_MEMBER_ID (25).
            try kafka.failRequests(apiKey: 12, count: 1, errorCode: 25)
            let partitions = Set((0..<2).map { KafkaTopicPartition(topic: "losing", partition: Int32($0)) })
            func lostThenAssigned(_ events: [KafkaConsumer.Event]) -> Bool {
                guard let lost = events.firstIndex(where: { if case .partitionsLost(let lost) = $0 { Set(lost) == partitions } else { false } }) else {
                    return false
                }
                return events[(lost + 1)...].contains { if case .partitionsAssigned(let again) = $0 { Set(again) == partitions } else { false } }
            }
            let rejoinDeadline = ContinuousClock.now + .seconds(60)
            while !lostThenAssigned(seen.withLock { $0 }) {
                guard ContinuousClock.now < rejoinDeadline else { throw TestTimeout(description: "events: \(seen.withLock { $0 })") }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(!seen.withLock { $0 }.contains { if case .partitionsRevoked = $0 { true } else { false } }, "lost, not revoked")
            #expect(!consumer.memberID.isEmpty && consumer.memberID != firstMemberID, "a member dropped joins again as a new one")
            await consumer.close()
            await listener.value
        }
    }

    /// What the application does in `willRevokePartitions` happens before its partitions' next owner starts: the
    /// rebalance waits for it, the partitions are already out of the assignment it sees, and they are still
    /// librdkafka's, so positions can still be stored for the revocation's commit.
    @Test("partitions being revoked are handed to willRevokePartitions before their commit, and the rebalance waits for it")
    func willRevokePartitionsRunsBeforeTheCommit() async throws {
        try await withEmbeddedKafka(topics: ["revoking": 2]) { kafka in
            try await produceNumbered(20, to: "revoking", kafka: kafka)
            let group = uniqueGroup()
            struct Revocation: Sendable {
                var partitions: Set<KafkaTopicPartition>
                var assignmentSeen: Set<KafkaTopicPartition>
                var wasReading: Bool
                var storeError: KafkaError?
                var returnedAt: ContinuousClock.Instant
            }
            let revocations = Mutex([Revocation]())
            let consumerBox = Mutex<KafkaConsumer?>(nil)
            var configuration = consumerConfiguration(kafka, group: group)
            configuration.willRevokePartitions = { partitions in
                guard let consumer = consumerBox.withLock({ $0 }) else { return }
                let assignmentSeen = consumer.assignment
                let wasReading = partitions.contains { consumer.isReading($0, generation: consumer.assignmentGeneration(of: $0)) }
                // Still librdkafka's: the position is stored, and committed with the revocation.
                var storeError: KafkaError?
                do throws(KafkaError) {
                    try consumer.storeOffsets(partitions.map { KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: 7) })
                } catch {
                    storeError = error
                }
                Thread.sleep(forTimeInterval: 1.5)
                let revocation = Revocation(
                    partitions: partitions,
                    assignmentSeen: assignmentSeen,
                    wasReading: wasReading,
                    storeError: storeError,
                    returnedAt: .now
                )
                revocations.withLock { $0.append(revocation) }
            }
            let first = try KafkaConsumer(configuration: configuration, logger: testLogger)
            consumerBox.withLock { $0 = first }
            try first.subscribe(topics: ["revoking"])
            let deadline = ContinuousClock.now + .seconds(30)
            while first.assignment.count != 2 {
                guard ContinuousClock.now < deadline else { throw TestTimeout(description: "no assignment") }
                try await Task.sleep(for: .milliseconds(50))
            }
            let second = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            try second.subscribe(topics: ["revoking"])
            let splitDeadline = ContinuousClock.now + .seconds(60)
            while second.assignment.isEmpty {
                guard ContinuousClock.now < splitDeadline else { throw TestTimeout(description: "the group never split") }
                try await Task.sleep(for: .milliseconds(20))
            }
            let secondAssignedAt = ContinuousClock.now
            let revocation = try #require(revocations.withLock { $0.first })
            #expect(revocation.partitions.count == 2, "an eager rebalance revokes every partition")
            #expect(revocation.assignmentSeen.isEmpty, "out of the assignment the application sees")
            #expect(!revocation.wasReading)
            #expect(revocation.storeError == nil, "still librdkafka's assignment: \(String(describing: revocation.storeError))")
            #expect(revocation.returnedAt < secondAssignedAt, "the rebalance waited for it")
            // (The stored positions go in the revocation's commit, which the embedded broker refuses while the group
            // rebalances, REBALANCE_IN_PROGRESS; a real cluster takes it from the generation being revoked.)
            await second.close()
            await first.close()
        }
    }

    @Test("a committed offset is where a restarted consumer resumes; uncommitted records come again")
    func commitThenRestart() async throws {
        try await withEmbeddedKafka(topics: ["restart": 1]) { kafka in
            try await produceNumbered(100, to: "restart", kafka: kafka)
            let group = uniqueGroup()
            var configuration = consumerConfiguration(kafka, group: group)
            configuration.isAutoCommitEnabled = false

            let first = try KafkaConsumer(configuration: configuration, logger: testLogger)
            try first.subscribe(topics: ["restart"])
            let read = try await collect(60, from: first)
            #expect(read.map(\.offset) == Array(0..<60))
            // Only the first 40 are done; 40...59 were read but not finished.
            try await first.commit([read[39].nextPosition])
            await first.close()

            let second = try KafkaConsumer(configuration: configuration, logger: testLogger)
            try second.subscribe(topics: ["restart"])
            let committed = try await second.committed([KafkaTopicPartition(topic: "restart", partition: 0)])
            #expect(committed.first?.offset == 40)
            let again = try await collect(60, from: second)
            await second.close()
            #expect(again.first?.offset == 40, "resumes at the committed offset")
            #expect(again.map(\.offset) == Array(40..<100), "the uncommitted records are delivered again")
        }
    }

    /// A replay records with each offset it commits which range it is the progress of; the embedded broker keeps the
    /// text (OffsetCommit) and gives it back (OffsetFetch), as a real one does.
    @Test("metadata committed with an offset is read back with it; an offset committed without any has none")
    func commitMetadataRoundTrip() async throws {
        try await withEmbeddedKafka(topics: ["annotated": 2]) { kafka in
            try await produceNumbered(20, to: "annotated", kafka: kafka)
            let group = uniqueGroup()
            var configuration = consumerConfiguration(kafka, group: group)
            configuration.isAutoCommitEnabled = false
            let partitions = [KafkaTopicPartition(topic: "annotated", partition: 0), KafkaTopicPartition(topic: "annotated", partition: 1)]
            let consumer = try KafkaConsumer(configuration: configuration, logger: testLogger)
            try consumer.assign(partitions.map { KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: KafkaOffset.beginning) })
            let text = "campaign-pipeline-replay/1 from=0:2 to=0:4 offsets=2..<4 é"
            try await consumer.commit([KafkaOffsetAndMetadata(KafkaTopicPartitionOffset(topic: "annotated", partition: 0, offset: 4), metadata: text)])
            try await consumer.commit([KafkaTopicPartitionOffset(topic: "annotated", partition: 1, offset: 3)])
            await consumer.close()

            let check = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            let committed = try await check.committedWithMetadata(partitions)
            #expect(try await check.committed(partitions).map(\.offset) == [4, 3])
            await check.close()
            #expect(committed.map(\.position.offset) == [4, 3])
            #expect(committed.first?.metadata == text)
            #expect(committed.last?.metadata == "")

            let fresh = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
            let nothing = try await fresh.committedWithMetadata(partitions)
            await fresh.close()
            #expect(nothing.allSatisfy { $0.position.offset == KafkaOffset.invalid && $0.metadata.isEmpty })
        }
    }

    /// A consumer whose application takes nothing (its buffer full, as when its outputs cannot be written) still
    /// serves its group: a member joining gets its share within a join, not after `max.poll.interval.ms` (found by
    /// review: the poll thread stopped polling while the buffer was full, and librdkafka serves rebalances only inside
    /// a poll). The records the full consumer had fetched are then read exactly once: its own partition's by it, in
    /// order, and the other's by the new member from the start (nothing was committed).
    @Test("a consumer with a full buffer still serves a rebalance, and nothing is then read twice or lost")
    func fullBufferServesTheGroup() async throws {
        try await withEmbeddedKafka(topics: ["full": 2]) { kafka in
            try await produceNumbered(600, to: "full", kafka: kafka)
            let group = uniqueGroup()
            var configuration = consumerConfiguration(kafka, group: group)
            configuration.bufferCapacity = 40
            configuration.isAutoCommitEnabled = false
            // Longer than the test waits: without the fix the rebalance waits this long for the full member.
            configuration.properties["max.poll.interval.ms"] = "120000"
            let first = try KafkaConsumer(configuration: configuration, logger: testLogger)
            try first.subscribe(topics: ["full"])
            try await waitUntil("the first consumer filling its buffer", within: .seconds(60)) { first.assignment.count == 2 && first.recordsFetched >= 40 }
            // Full for a while: fetching stopped, the group still served.
            try await Task.sleep(for: .seconds(1))

            let second = try KafkaConsumer(configuration: configuration, logger: testLogger)
            try second.subscribe(topics: ["full"])
            try await waitUntil("the group splitting while the first consumer's buffer was full", within: .seconds(30)) {
                first.assignment.count == 1 && second.assignment.count == 1
            }
            for (consumer, name) in [(first, "first"), (second, "second")] {
                let mine = try #require(consumer.assignment.first)
                let end = try await consumer.watermarks(topic: mine.topic, partition: mine.partition).high
                // One iterator for all: a batch it took is not handed out again to another.
                let read = try await within(.seconds(30)) {
                    var read: [KafkaConsumerMessage] = []
                    for try await message in consumer.messages {
                        read.append(message)
                        if read.count >= Int(end) { break }
                    }
                    return read
                }
                let records = try #require(read, "\(name): timed out reading \(mine)")
                #expect(records.allSatisfy { $0.topicPartition == mine }, "\(name): only its own partition after the split")
                #expect(records.map(\.offset) == Array(0..<end), "\(name): every record of \(mine) once, in order")
            }
            await second.close()
            await first.close()
        }
    }

    /// A buffer full for a second pauses the partitions in librdkafka (see the test above), which drops what it had
    /// fetched ahead: once there is room they resume after the last record kept (librdkafka 2.0 alone would restart
    /// from an older position), a partition the application paused meanwhile stays paused until it resumes it, and
    /// each record comes once, in order.
    @Test(
        "partitions paused for a full buffer resume after the last record kept: each record once, in order, also across the application's pause",
        .timeLimit(.minutes(2))
    )
    func fullBufferKeepsOrder() async throws {
        try await withEmbeddedKafka(topics: ["brim": 2]) { kafka in
            try await produceNumbered(600, to: "brim", kafka: kafka)
            var configuration = consumerConfiguration(kafka, group: nil)
            configuration.bufferCapacity = 40
            let consumer = try KafkaConsumer(configuration: configuration, logger: testLogger)
            let zero = KafkaTopicPartition(topic: "brim", partition: 0)
            let one = KafkaTopicPartition(topic: "brim", partition: 1)
            try consumer.assign([zero, one].map { KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: KafkaOffset.beginning) })
            let ends = [
                zero: try await consumer.watermarks(topic: "brim", partition: 0).high,
                one: try await consumer.watermarks(topic: "brim", partition: 1).high,
            ]
            // Full: the buffer holds 40 (and a batch being handed over when it filled).
            try await waitUntil("the buffer filling", within: .seconds(30)) { consumer.recordsFetched >= 40 }
            // A second of a full buffer: the poll thread pauses both partitions.
            try await waitUntil("the pause for the full buffer", within: .seconds(30)) { consumer.pausedForFullBuffer == [zero, one] }
            consumer.pause([zero])
            // The pause takes effect on the poll thread; records handed over before it are the application's.
            while !consumer.pausedPartitions.contains(zero) { try await Task.sleep(for: .milliseconds(5)) }
            var iterator = consumer.messages.makeAsyncIterator()
            var read: [KafkaTopicPartition: [Int64]] = [:]
            func readUntil(_ done: @escaping () -> Bool) async throws {
                let deadline = ContinuousClock.now + .seconds(30)
                while !done() {
                    guard ContinuousClock.now < deadline else { throw TestTimeout(description: "read only \(read.mapValues(\.count))") }
                    guard let message = try await iterator.next() else { throw TestTimeout(description: "the stream ended") }
                    read[message.topicPartition, default: []].append(message.offset)
                }
            }
            try await readUntil { (read[one]?.count ?? 0) >= Int(ends[one] ?? 0) }
            #expect(read[zero] == nil, "nothing of the paused partition")
            consumer.resume([zero])
            try await readUntil { (read[zero]?.count ?? 0) >= Int(ends[zero] ?? 0) }
            #expect(read[zero] == Array(0..<(ends[zero] ?? 0)), "partition 0 once, in order")
            #expect(read[one] == Array(0..<(ends[one] ?? 0)), "partition 1 once, in order")
            try await expectNoRecord(from: consumer, for: .seconds(1))
            await consumer.close()
        }
    }

    @Test("stored offsets are committed by the background commit and at close")
    func storedOffsetsAreCommittedAtClose() async throws {
        try await withEmbeddedKafka(topics: ["stored": 2]) { kafka in
            try await produceNumbered(50, to: "stored", kafka: kafka)
            let group = uniqueGroup()
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            try consumer.subscribe(topics: ["stored"])
            let partitions = [KafkaTopicPartition(topic: "stored", partition: 0), KafkaTopicPartition(topic: "stored", partition: 1)]
            let read = try await collect(50, from: consumer)
            // The first half, committed in the background (every second) while the consumer runs: without it, a crash
            // would read everything since the last close again.
            let firstHalf = Array(read.prefix(25))
            try consumer.storeOffsets(latestPositions(of: firstHalf))
            let expectedWhileRunning = Set(latestPositions(of: firstHalf))
            var committedWhileRunning: Set<KafkaTopicPartitionOffset> = []
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                committedWhileRunning = Set(try await consumer.committed(partitions).filter { $0.offset >= 0 })
                if committedWhileRunning == expectedWhileRunning { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(committedWhileRunning == expectedWhileRunning, "committed in the background, before close")
            // The rest, stored just before the close, which commits it.
            try consumer.storeOffsets(latestPositions(of: read))
            await consumer.close()

            let check = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
            let committed = try await check.committed(partitions)
            await check.close()
            let expected = Set(latestPositions(of: read))
            #expect(Set(committed) == expected)
        }
    }

    /// A replay asks this when its consumer stops short of a range's end. (The mock cluster keeps no open
    /// transactions back, so the third answer cannot be shown here; markers are, in the next test.)
    @Test("what is left to read in an offset range: its first record, or nothing past the last record")
    func remainderOfRange() async throws {
        try await withEmbeddedKafka(topics: ["probed": 1]) { kafka in
            _ = try await produceNumbered(10, to: "probed", kafka: kafka) { _ in Date() }
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let partition = KafkaTopicPartition(topic: "probed", partition: 0)
            #expect(try await consumer.remainder(from: 0, before: 10, in: partition) == .record(offset: 0))
            #expect(try await consumer.remainder(from: 7, before: 10, in: partition) == .record(offset: 7))
            #expect(try await consumer.remainder(from: 9, before: 10, in: partition) == .record(offset: 9))
            #expect(try await consumer.remainder(from: 10, before: 12, in: partition) == .nothingReadable, "offsets past the last record hold none")
            #expect(try await consumer.remainder(from: 4, before: 4, in: partition) == .nothingReadable, "an empty range holds none")
            await consumer.close()
        }
    }

    /// On a real cluster a committed or aborted transaction ends in a marker, an offset no consumer is given; the
    /// mock writes none, so the test writes them over the Kafka protocol (`TransactionMarkers`).
    @Test("transaction markers: consumers read through them, and what is left of a range ending in one is nothing")
    func transactionMarkers() async throws {
        try await withEmbeddedKafka(topics: ["marked": 1]) { kafka in
            let partition = KafkaTopicPartition(topic: "marked", partition: 0)
            _ = try await produceNumbered(3, to: "marked", kafka: kafka)
            #expect(try await TransactionMarkers.append(.commit, topic: "marked", partition: 0, bootstrapServers: kafka.bootstrapServers) == 3)
            _ = try await produceNumbered(2, to: "marked", kafka: kafka, startingAt: 3)
            #expect(try await TransactionMarkers.append(.abort, topic: "marked", partition: 0, bootstrapServers: kafka.bootstrapServers) == 6)

            var configuration = consumerConfiguration(kafka, group: nil)
            configuration.properties["check.crcs"] = "true"  // the written batches are well-formed
            let consumer = try KafkaConsumer(configuration: configuration, logger: testLogger)
            #expect(try await consumer.watermarks(topic: "marked", partition: 0).high == 7, "the markers take offsets 3 and 6")
            try consumer.assign([KafkaTopicPartitionOffset(topic: "marked", partition: 0, offset: KafkaOffset.beginning)])
            let received = try await collect(5, from: consumer, timeout: .seconds(15))
            #expect(received.map(\.offset) == [0, 1, 2, 4, 5], "every record, no marker")
            #expect(received.map { String(decoding: $0.value ?? [], as: UTF8.self) } == (0..<5).map { "value-\($0)" })
            #expect(try await consumer.remainder(from: 3, before: 7, in: partition) == .record(offset: 4), "a marker is skipped")
            #expect(try await consumer.remainder(from: 6, before: 7, in: partition) == .nothingReadable, "a range ending in a marker")
            #expect(try await consumer.remainder(from: 3, before: 4, in: partition) == .nothingReadable, "a range of one marker")
            await consumer.close()
        }
    }

    /// `TransactionMarkers.append` tries each bootstrap server in turn; a broker it could not reach ended the call
    /// with that error, before the broker that leads the partition was asked.
    @Test("a transaction marker is written by the leader even when a bootstrap server before it is unreachable")
    func transactionMarkerPastAnUnreachableBroker() async throws {
        try await withEmbeddedKafka(topics: ["marked-past": 1]) { kafka in
            let servers = "127.0.0.1:1,\(kafka.bootstrapServers)"
            let offset = try await TransactionMarkers.append(.commit, topic: "marked-past", partition: 0, bootstrapServers: servers, timeout: .seconds(5))
            #expect(offset == 0)
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            #expect(try await consumer.watermarks(topic: "marked-past", partition: 0).high == 1)
            await consumer.close()
            await #expect(throws: TransactionMarkerError.self) {
                try await TransactionMarkers.append(.commit, topic: "marked-past", partition: 0, bootstrapServers: "127.0.0.1:1", timeout: .seconds(5))
            }
        }
    }

    @Test("offsets-for-times and seek start at the first record at or after a timestamp")
    func offsetsForTimesAndSeek() async throws {
        try await withEmbeddedKafka(topics: ["timed": 2]) { kafka in
            let base = Date(timeIntervalSince1970: 1_800_000_000)
            // Record i is stamped base + i seconds; both partitions get every record's key spread.
            let reports = try await produceNumbered(200, to: "timed", kafka: kafka) { base.addingTimeInterval(Double($0)) }
            let target = base.addingTimeInterval(120)
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let partitions = [KafkaTopicPartition(topic: "timed", partition: 0), KafkaTopicPartition(topic: "timed", partition: 1)]

            // The first record at or after the target, per partition, computed from what was produced.
            var expected: [Int32: Int64] = [:]
            for (index, report) in reports.enumerated() where index >= 120 {
                expected[report.partition] = min(expected[report.partition] ?? .max, report.offset)
            }
            for strategy in [KafkaConsumer.OffsetLookupStrategy.automatic, .search] {
                let found = try await consumer.offsets(forTimestamp: target, in: partitions, strategy: strategy)
                #expect(Dictionary(uniqueKeysWithValues: found.map { ($0.partition, $0.offset) }) == expected, "\(strategy)")
            }
            // A time after every record gives the end offsets; one before every record, the beginning.
            let late = try await consumer.offsets(forTimestamp: base.addingTimeInterval(10_000), in: partitions)
            let counts = Dictionary(grouping: reports, by: \.partition).mapValues { Int64($0.count) }
            #expect(Dictionary(uniqueKeysWithValues: late.map { ($0.partition, $0.offset) }) == counts)
            let early = try await consumer.offsets(forTimestamp: base.addingTimeInterval(-10), in: partitions)
            #expect(early.allSatisfy { $0.offset == 0 })

            // Assign at the beginning, read a little, then seek to the looked-up offsets.
            try consumer.assign(partitions.map { KafkaTopicPartitionOffset(topic: $0.topic, partition: $0.partition, offset: 0) })
            _ = try await collect(5, from: consumer)
            let positions = try await consumer.offsets(forTimestamp: target, in: partitions)
            try await consumer.seek(positions)
            let after = try await collect(80, from: consumer)
            await consumer.close()
            #expect(after.count == 80)
            #expect(after.allSatisfy { $0.timestamp! >= target }, "nothing before the timestamp after the seek")
            for partition in partitions {
                let firstSeen = after.first { $0.partition == partition.partition }
                #expect(firstSeen?.offset == expected[partition.partition])
            }
        }
    }

    /// The mock cluster answers a lookup by time with the end offset. On a topic that ends in transaction markers
    /// the offset just before that answer holds no record, so checking only that offset took the wrong answer for a
    /// right one: the last record before the answer, further back, is the one that must be older than the target.
    @Test("offsets-for-times is not fooled by a wrong broker answer that follows transaction markers")
    func offsetsForTimesBeforeMarkers() async throws {
        try await withEmbeddedKafka(topics: ["timed-marked": 1]) { kafka in
            let base = Date(timeIntervalSince1970: 1_800_000_000)
            // Offsets 0-4: records stamped base + 0…4 s; 5-7: markers; 8-12: records stamped base + 5…9 s; 13-15: markers.
            for half in 0..<2 {
                _ = try await produceNumbered(5, to: "timed-marked", kafka: kafka, startingAt: half * 5) { base.addingTimeInterval(Double($0)) }
                for _ in 0..<3 {
                    try await TransactionMarkers.append(.commit, topic: "timed-marked", partition: 0, bootstrapServers: kafka.bootstrapServers)
                }
            }
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let partition = KafkaTopicPartition(topic: "timed-marked", partition: 0)
            #expect(try await consumer.watermarks(topic: "timed-marked", partition: 0).high == 16)
            // At base + 4.5 s, offset 5: the first offset after the last older record (reading from 5 or from 8, the
            // first newer record, gives the same records).
            for (seconds, expected) in [(-5.0, Int64(0)), (0, 0), (4.5, 5), (7, 10), (9, 12), (9.5, 16), (100, 16)] {
                let found = try await consumer.offsets(forTimestamp: base.addingTimeInterval(seconds), in: [partition])
                #expect(found.map(\.offset) == [expected], "base + \(seconds) s")
            }
            await consumer.close()
        }
    }

    @Test("pausing a partition stops its records; resuming continues where it stopped")
    func pauseAndResume() async throws {
        try await withEmbeddedKafka(topics: ["paused": 2]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            for index in 0..<10 {
                _ = try await producer.send(KafkaProducerRecord(topic: "paused", partition: Int32(index % 2), value: Array("first-\(index)".utf8)))
            }
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let zero = KafkaTopicPartition(topic: "paused", partition: 0)
            let one = KafkaTopicPartition(topic: "paused", partition: 1)
            try consumer.assign([
                KafkaTopicPartitionOffset(topic: "paused", partition: 0, offset: KafkaOffset.beginning),
                KafkaTopicPartitionOffset(topic: "paused", partition: 1, offset: KafkaOffset.beginning),
            ])
            let firstRound = try await collect(10, from: consumer)
            #expect(firstRound.count == 10)

            consumer.pause([zero])
            for index in 0..<10 {
                _ = try await producer.send(KafkaProducerRecord(topic: "paused", partition: Int32(index % 2), value: Array("second-\(index)".utf8)))
            }
            let whilePaused = try await collect(5, from: consumer)
            #expect(whilePaused.allSatisfy { $0.partition == 1 }, "nothing from the paused partition")
            // Give the paused partition time to (wrongly) deliver.
            try await expectNoRecord(from: consumer, for: .seconds(2))

            consumer.resume([zero])
            let resumed = try await collect(5, from: consumer)
            #expect(resumed.allSatisfy { $0.partition == 0 })
            #expect(resumed.map(\.offset) == [5, 6, 7, 8, 9], "resumes at the first record not read")
            await consumer.close()
            await producer.close()
            _ = one
        }
    }

    /// A pipeline that stops reads nothing more while it drains, and its consumer must keep serving the group (a lost
    /// session reaches the application during the drain): `stopReading()` pauses everything, and a backpressure
    /// resume after it does not restart fetching.
    @Test("after stopReading nothing more is handed over, even when a partition is resumed")
    func stopReadingHoldsEverything() async throws {
        try await withEmbeddedKafka(topics: ["stopped": 2]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            try consumer.assign([
                KafkaTopicPartitionOffset(topic: "stopped", partition: 0, offset: KafkaOffset.beginning),
                KafkaTopicPartitionOffset(topic: "stopped", partition: 1, offset: KafkaOffset.beginning),
            ])
            _ = try await producer.send(KafkaProducerRecord(topic: "stopped", partition: 0, value: Array("before".utf8)))
            #expect(try await collect(1, from: consumer).count == 1)

            consumer.stopReading()
            consumer.resume([KafkaTopicPartition(topic: "stopped", partition: 0)])
            for index in 0..<10 {
                _ = try await producer.send(KafkaProducerRecord(topic: "stopped", partition: Int32(index % 2), value: Array("after-\(index)".utf8)))
            }
            // Give the partitions time to (wrongly) deliver.
            try await expectNoRecord(from: consumer, for: .seconds(2))
            await consumer.close()
            await producer.close()
        }
    }

    /// librdkafka 2.0 keeps an application's pause across unassign and assign; the consumer forgets the pause with
    /// the revoked partition, so it must lift librdkafka's too.
    @Test("a partition paused, revoked and given back to the same consumer is read again")
    func pausedPartitionGivenBackIsRead() async throws {
        try await withEmbeddedKafka(topics: ["paused-given-back": 2]) { kafka in
            let read = try await recordsReadAfterTheGroupSplits(kafka, topic: "paused-given-back") { first in
                first.pause(Array(first.assignment))
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(read == 5, "the partition given back is fetched again")
        }
    }

    /// Work of the reading that is over (a pipeline's tracker not yet retired) may still pause the partition just
    /// after its revocation, with that reading's generation (as the pipeline does); whether the pause takes effect
    /// before or after the partition is given back, it must not hold back the partition's next reading.
    @Test("a pause issued just after a revocation does not hold back the partition given back")
    func pauseAfterRevocation() async throws {
        try await withEmbeddedKafka(topics: ["late-pause": 2]) { kafka in
            var listener: Task<Void, Never>?
            let read = try await recordsReadAfterTheGroupSplits(kafka, topic: "late-pause") { first in
                let generations = Dictionary(uniqueKeysWithValues: first.assignment.map { ($0, first.assignmentGeneration(of: $0)) })
                listener = Task {
                    for await event in first.events {
                        if case .partitionsRevoked(let partitions) = event {
                            for partition in partitions { first.pause([partition], generation: generations[partition]) }
                            return
                        }
                    }
                }
            } settle: { _ in
                await listener?.value
            }
            #expect(read == 5, "the partition given back is fetched")
        }
    }

    /// The pipeline pauses for backpressure with its reading's generation: a tracker of the reading before the
    /// revocation, not yet retired, must not pause the reading that follows.
    @Test("a pause for a reading that is over does not pause the partition's next reading")
    func pauseOfAnEarlierReading() async throws {
        try await withEmbeddedKafka(topics: ["earlier-reading": 2]) { kafka in
            var before: [KafkaTopicPartition: Int] = [:]
            let read = try await recordsReadAfterTheGroupSplits(kafka, topic: "earlier-reading") { first in
                for partition in first.assignment { before[partition] = first.assignmentGeneration(of: partition) }
            } settle: { first in
                let mine = try #require(first.assignment.first)
                #expect(first.assignmentGeneration(of: mine) != before[mine], "given back: a new reading")
                first.pause([mine], generation: before[mine])
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(read == 5, "the new reading is not paused")
        }
    }

    /// A consumer takes both partitions of `topic`, `prepare` runs, a second member joins and the group splits; then
    /// five records go to the partition the first kept: how many of them it reads (within 15 s).
    private func recordsReadAfterTheGroupSplits(
        _ kafka: EmbeddedKafka,
        topic: String,
        prepare: (KafkaConsumer) async throws -> Void,
        settle: (KafkaConsumer) async throws -> Void = { _ in }
    ) async throws -> Int? {
        let group = uniqueGroup()
        let first = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
        try first.subscribe(topics: [topic])
        let deadline = ContinuousClock.now + .seconds(30)
        while first.assignment.count != 2 {
            guard ContinuousClock.now < deadline else { throw TestTimeout(description: "no assignment") }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await prepare(first)
        let second = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: group), logger: testLogger)
        try second.subscribe(topics: [topic])
        try await waitUntil("the group splitting", within: .seconds(60), every: .milliseconds(100)) { first.assignment.count == 1 && second.assignment.count == 1 }
        try await settle(first)
        let mine = try #require(first.assignment.first)
        let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
        for index in 0..<5 {
            _ = try await producer.send(KafkaProducerRecord(topic: mine.topic, partition: mine.partition, value: Array("after-\(index)".utf8)))
        }
        await producer.close()
        let received = try? await collect(5, from: first, timeout: .seconds(15))
        await second.close()
        await first.close()
        return received?.count
    }

    @Test("records buffered when their partition pauses are handed over after it resumes, in order, and not fetched again")
    func bufferedRecordsSurvivePause() async throws {
        try await withEmbeddedKafka(topics: ["held": 2]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let records = (0..<2_000).map { KafkaProducerRecord(topic: "held", partition: Int32($0 % 2), value: Array("record-\($0)".utf8)) }
            for result in await producer.send(contentsOf: records) { _ = try result.get() }
            await producer.close()

            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let paused = KafkaTopicPartition(topic: "held", partition: 1)
            try consumer.assign([0, 1].map { KafkaTopicPartitionOffset(topic: "held", partition: $0, offset: KafkaOffset.beginning) })
            // A record lost at the pause would leave the reader waiting for good.
            let read = try await within(.seconds(60)) {
                var iterator = consumer.messages.makeAsyncIterator()
                var received: [KafkaTopicPartition: [Int64]] = [:]
                let first = try #require(try await iterator.nextBatch())
                for message in first { received[message.topicPartition, default: []].append(message.offset) }
                // Both partitions are fetched into the buffer meanwhile; partition 1's records there are held back.
                try await Task.sleep(for: .milliseconds(500))
                consumer.pause([paused])
                try await Task.sleep(for: .milliseconds(300))
                consumer.resume([paused])
                while received.values.reduce(0, { $0 + $1.count }) < 2_000, let batch = try await iterator.nextBatch() {
                    for message in batch { received[message.topicPartition, default: []].append(message.offset) }
                }
                return received
            }
            let fetched = consumer.recordsFetched
            await consumer.close()
            let received = try #require(read, "timed out waiting for 2,000 records")
            #expect(received[KafkaTopicPartition(topic: "held", partition: 0)] == Array(0..<1_000))
            #expect(received[paused] == Array(0..<1_000), "every record of the paused partition once, in order")
            #expect(fetched == 2_000, "\(fetched) records fetched for 2,000: none dropped at the pause and fetched again")
        }
    }

    @Test("pausing holds back what was fetched but not handed over; pause and resume in quick succession never skip, repeat or fetch again a record")
    func pauseResumeFlapping() async throws {
        try await withEmbeddedKafka(topics: ["flap": 1]) { kafka in
            let producer = try KafkaProducer(configuration: producerConfiguration(kafka), logger: testLogger)
            let records = (0..<3_000).map { KafkaProducerRecord(topic: "flap", partition: 0, value: Array("record-\($0)".utf8)) }
            for result in await producer.send(contentsOf: records) { _ = try result.get() }
            await producer.close()

            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: nil), logger: testLogger)
            let partition = KafkaTopicPartition(topic: "flap", partition: 0)
            try consumer.assign([KafkaTopicPartitionOffset(topic: "flap", partition: 0, offset: KafkaOffset.beginning)])
            let offsets = try await within(.seconds(90)) {
                var iterator = consumer.messages.makeAsyncIterator()
                var offsets: [Int64] = []
                var round = 0
                while offsets.count < 3_000, let batch = try await iterator.nextBatch() {
                    offsets += batch.map(\.offset)
                    round += 1
                    // Flap: the way a pipeline's backpressure toggles under load.
                    consumer.pause([partition])
                    if round % 3 == 0 { try await Task.sleep(for: .milliseconds(5)) }
                    consumer.resume([partition])
                    if round % 4 == 0 {
                        consumer.pause([partition])
                        consumer.resume([partition])
                    }
                }
                return offsets
            }
            let fetched = consumer.recordsFetched
            await consumer.close()
            let received = try #require(offsets, "timed out reading the partition")
            #expect(received == Array(0..<3_000), "every record once, in order (\(received.count) received)")
            // Records buffered at a pause, and those a poll still returns after it, are held back, not dropped and
            // fetched again.
            #expect(fetched == 3_000, "\(fetched) records fetched for 3,000")
        }
    }

    /// What `CampaignPipeline` and `ReplayLease` stop on: librdkafka goes on asking a group that refused a member,
    /// and reports each refusal (of the coordinator look-up, or of the join) as an error event. Other join errors are
    /// reported too, and are not refusals.
    @Test(
        "a subscribed consumer its group refuses reports a group refusal; other join errors are no refusal",
        .timeLimit(.minutes(2)),
        arguments: [
            (Int16(10), Int32(30), "refusal"),  // FindCoordinator: GROUP_AUTHORIZATION_FAILED
            (Int16(11), Int32(30), "refusal"),  // JoinGroup: GROUP_AUTHORIZATION_FAILED
            (Int16(11), Int32(26), "refusal"),  // JoinGroup: INVALID_SESSION_TIMEOUT
            (Int16(11), Int32(27), "error"),  // JoinGroup: REBALANCE_IN_PROGRESS, reported, then joined
            (Int16(11), Int32(14), "assigned"),  // JoinGroup: COORDINATOR_LOAD_IN_PROGRESS, waited out unreported
        ]
    )
    func groupRefusalIsReported(refusedRequest: Int16, errorCode: Int32, expected: String) async throws {
        try await withEmbeddedKafka(topics: ["refused": 1]) { kafka in
            try kafka.failRequests(apiKey: refusedRequest, count: expected == "refusal" ? 1_000 : 3, errorCode: errorCode)
            let consumer = try KafkaConsumer(configuration: consumerConfiguration(kafka, group: uniqueGroup()), logger: testLogger)
            try consumer.subscribe(topics: ["refused"])
            // The first error, or the assignment once the group takes the member.
            let first = try await within(.seconds(30)) { () -> KafkaConsumer.Event? in
                for await event in consumer.events {
                    switch event {
                    case .error, .partitionsAssigned: return event
                    default: continue
                    }
                }
                return nil
            }
            await consumer.close()
            switch first ?? nil {
            case .error(let error)?:
                #expect(expected != "assigned", "an error for a refusal that is waited out: \(error)")
                #expect(error.isGroupRefusal == (expected == "refusal"), "\(error)")
                #expect(error.message.contains(refusedRequest == 10 ? "FindCoordinator" : "JoinGroup"), "\(error)")
            case .partitionsAssigned?:
                #expect(expected == "assigned", "assigned before the error was reported")
            default:
                Issue.record("neither an error nor an assignment within 30 s")
            }
        }
    }
}

/// The position after the last record of each partition in `messages`.
func latestPositions(of messages: [KafkaConsumerMessage]) -> [KafkaTopicPartitionOffset] {
    var latest: [KafkaTopicPartition: Int64] = [:]
    for message in messages {
        latest[message.topicPartition] = max(latest[message.topicPartition] ?? -1, message.offset)
    }
    return latest.map { KafkaTopicPartitionOffset(topic: $0.key.topic, partition: $0.key.partition, offset: $0.value + 1) }
}
