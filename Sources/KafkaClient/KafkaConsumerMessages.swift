/// The records a ``KafkaConsumer`` reads, as an `AsyncSequence`.
///
/// Records are handed over in batches: the iterator suspends once per batch, not once per record.
public struct KafkaConsumerMessages: AsyncSequence, Sendable {
    public typealias Element = KafkaConsumerMessage

    let buffer: KafkaConsumer.MessageBuffer

    /// Iterates the records.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let buffer: KafkaConsumer.MessageBuffer
        private var batch: [KafkaConsumerMessage] = []
        private var index = 0

        init(buffer: KafkaConsumer.MessageBuffer) {
            self.buffer = buffer
        }

        /// The next record; `nil` once the consumer is closed.
        ///
        /// - Throws: ``KafkaError`` when the consumer cannot go on.
        public mutating func next() async throws -> KafkaConsumerMessage? {
            if index < batch.count {
                defer { index += 1 }
                return batch[index]
            }
            guard let next = try await nextBatch(), !next.isEmpty else { return nil }
            batch = next
            index = 1
            return next[0]
        }

        /// The rest of the current batch, or the next batch: every record available without waiting more than
        /// once. `nil` once the consumer is closed.
        public mutating func nextBatch() async throws -> [KafkaConsumerMessage]? {
            if index < batch.count {
                defer {
                    batch = []
                    index = 0
                }
                return Array(batch[index...])
            }
            batch = []
            index = 0
            return try await buffer.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer) }
}
