import Dispatch

/// Runs librdkafka calls that block (sync commit, offset and metadata look-ups) on a dispatch queue of their own,
/// so they never hold a thread of Swift's cooperative pool.
enum BlockingCalls {
    private static let queue = DispatchQueue(label: "campaign-pipeline.kafka.blocking", attributes: .concurrent)

    /// Runs `body` off the cooperative pool and returns its result.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }

    /// Runs a throwing `body` off the cooperative pool.
    static func run<T: Sendable>(
        _ body: @escaping @Sendable () throws(KafkaError) -> T
    ) async throws(KafkaError) -> T {
        let result: Result<T, KafkaError> = await run {
            do throws(KafkaError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }
}
