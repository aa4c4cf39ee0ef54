import Foundation

/// Runs librdkafka calls that block (sync commit, offset and metadata look-ups, record probes) each on a thread of
/// its own, so they never hold a thread of Swift's cooperative pool, nor wait behind one another: a concurrent
/// dispatch queue runs only a few blocks at once on Linux (three on a 2-core machine), so slow calls (record probes
/// waiting seconds for a fetch) held up every commit and look-up behind them.
enum BlockingCalls {
    /// Runs `body` off the cooperative pool and returns its result.
    static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread { continuation.resume(returning: body()) }
            thread.name = "kafka-blocking-call"
            thread.start()
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
