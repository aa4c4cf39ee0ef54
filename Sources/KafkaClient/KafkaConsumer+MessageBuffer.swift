import Foundation

extension KafkaConsumer {
    /// The bounded hand-over between the consumer's poll thread and the task iterating ``KafkaConsumer/messages``.
    ///
    /// The poll thread pushes whole batches and waits (on its own thread) while the buffer is full; the iterator
    /// takes whole batches, so there is one suspension per batch, not per message.
    ///
    /// `@unchecked Sendable`: every stored property is read and written only while `condition` is locked.
    final class MessageBuffer: @unchecked Sendable {
        private let condition = NSCondition()
        private let capacity: Int
        private var batches: [[KafkaConsumerMessage]] = []
        private var head = 0
        private var count = 0
        private var waiter: CheckedContinuation<[KafkaConsumerMessage]?, any Error>?
        private var outcome: Result<Void, KafkaError>?
        /// Messages of paused partitions, taken out of the hand-over in order: handed over when their partition
        /// resumes (``unpark(partitions:)``), dropped when it is revoked or sought (``remove(partitions:)``). Not
        /// counted against the capacity, so a paused partition's messages never hold up the others'.
        private var parked: [KafkaTopicPartition: [KafkaConsumerMessage]] = [:]

        init(capacity: Int) {
            self.capacity = max(1, capacity)
        }

        /// How many messages the buffer holds references to, taken or not (for tests: taken batches must be
        /// released at once).
        var heldMessageCount: Int {
            condition.lock()
            defer { condition.unlock() }
            return batches.reduce(0) { $0 + $1.count } + parked.values.reduce(0) { $0 + $1.count }
        }

        // MARK: Poll-thread side

        /// Waits up to `timeout` for room; returns whether there is room now.
        func waitForSpace(timeout: TimeInterval) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            if count < capacity || outcome != nil { return true }
            _ = condition.wait(until: Date(timeIntervalSinceNow: timeout))
            return count < capacity || outcome != nil
        }

        /// Hands a batch to the iterator (directly, if it is waiting).
        func push(_ batch: [KafkaConsumerMessage]) {
            guard !batch.isEmpty else { return }
            condition.lock()
            if outcome != nil {
                condition.unlock()
                return
            }
            if let waiter {
                self.waiter = nil
                condition.unlock()
                waiter.resume(returning: batch)
                return
            }
            batches.append(batch)
            count += batch.count
            condition.unlock()
        }

        /// Drops buffered and parked messages of the given partitions (revoked, or about to be read from another
        /// offset).
        func remove(partitions: Set<KafkaTopicPartition>) {
            guard !partitions.isEmpty else { return }
            condition.lock()
            defer { condition.unlock() }
            _ = take(partitions)
            for partition in partitions { parked[partition] = nil }
            condition.broadcast()
        }

        /// Holds back the buffered messages of the given partitions (paused) until ``unpark(partitions:)``.
        func park(partitions: Set<KafkaTopicPartition>) {
            guard !partitions.isEmpty else { return }
            condition.lock()
            defer { condition.unlock() }
            park(take(partitions))
            condition.broadcast()
        }

        /// Holds back messages of paused partitions that a poll returned after the pause, after those held already.
        func hold(_ messages: [KafkaConsumerMessage]) {
            condition.lock()
            defer { condition.unlock() }
            park(messages)
        }

        /// Appends `messages` to their partitions' held-back ones, in order. Call with the lock held.
        private func park(_ messages: [KafkaConsumerMessage]) {
            for message in messages {
                parked[message.topicPartition, default: []].append(message)
            }
        }

        /// Hands the held-back messages of the given partitions (resumed) over again, after what is buffered.
        func unpark(partitions: [KafkaTopicPartition]) {
            condition.lock()
            var batch: [KafkaConsumerMessage] = []
            for partition in partitions {
                if let messages = parked.removeValue(forKey: partition) { batch += messages }
            }
            condition.unlock()
            push(batch)
        }

        /// Takes the buffered messages of `partitions` out of the hand-over, in order. Call with the lock held.
        private func take(_ partitions: Set<KafkaTopicPartition>) -> [KafkaConsumerMessage] {
            // A few partitions, compared number first: a set lookup made a `KafkaTopicPartition` (counting a reference
            // to the topic's name, which every message shares) and hashed the name, for every buffered message, on
            // each pause (the in-flight limit pauses partitions many times a second).
            let wanted = Array(partitions)
            func isWanted(_ message: KafkaConsumerMessage) -> Bool {
                wanted.contains { $0.partition == message.partition && $0.topic == message.topic }
            }
            var kept: [[KafkaConsumerMessage]] = []
            var keptCount = 0
            var taken: [KafkaConsumerMessage] = []
            for batch in batches[head...] {
                // A batch with nothing to take is kept as it is, not copied message by message.
                guard batch.contains(where: isWanted) else {
                    kept.append(batch)
                    keptCount += batch.count
                    continue
                }
                var remaining: [KafkaConsumerMessage] = []
                for message in batch {
                    if isWanted(message) {
                        taken.append(message)
                    } else {
                        remaining.append(message)
                    }
                }
                if !remaining.isEmpty {
                    kept.append(remaining)
                    keptCount += remaining.count
                }
            }
            batches = kept
            head = 0
            count = keptCount
            return taken
        }

        /// Ends the sequence: buffered messages are still handed out, then the iterator gets `nil` (or `error`).
        func finish(error: KafkaError? = nil) {
            condition.lock()
            if outcome == nil {
                outcome = error.map { .failure($0) } ?? .success(())
            }
            let waiter = batches.count > head ? nil : self.waiter
            if waiter != nil { self.waiter = nil }
            condition.broadcast()
            condition.unlock()
            if let waiter {
                if let error { waiter.resume(throwing: error) } else { waiter.resume(returning: nil) }
            }
        }

        // MARK: Iterator side

        /// The next batch, `nil` at the end, waiting while none is buffered.
        func next() async throws -> [KafkaConsumerMessage]? {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    condition.lock()
                    if head < batches.count {
                        // Taken out, not copied: a batch left in place would keep its messages alive until the
                        // next compaction, up to 64 batches of them.
                        let batch = batches[head]
                        batches[head] = []
                        head += 1
                        count -= batch.count
                        if head > 64 && head * 2 > batches.count {
                            batches.removeFirst(head)
                            head = 0
                        }
                        condition.broadcast()
                        condition.unlock()
                        continuation.resume(returning: batch)
                    } else if let outcome {
                        condition.unlock()
                        switch outcome {
                        case .success: continuation.resume(returning: nil)
                        case .failure(let error): continuation.resume(throwing: error)
                        }
                    } else if Task.isCancelled {
                        condition.unlock()
                        continuation.resume(returning: nil)
                    } else {
                        waiter = continuation
                        condition.unlock()
                    }
                }
            } onCancel: {
                condition.lock()
                let waiter = self.waiter
                self.waiter = nil
                condition.unlock()
                waiter?.resume(returning: nil)
            }
        }
    }
}
