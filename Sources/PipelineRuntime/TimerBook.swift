import PipelineCore
import Synchronization

/// The pending timer expiries: delivered timer notifications whose countdown has not ended yet.
///
/// Its durable form is the compacted timers topic (one record per message id, a tombstone once fired), folded
/// back at start-up, so pending expiries survive a restart. A timer lives in the partition of the send it came
/// from and fires only on the instance that owns that partition.
final class TimerBook: Sendable {
    struct PendingTimer: Sendable, Equatable {
        var identity: MessageIdentity
        var expiresAt: Timestamp
        var partition: Int32
    }

    private struct State {
        var pending: [String: PendingTimer] = [:]
        /// Fired here and not yet seen tombstoned, so a late read of the timer record does not bring it back.
        var fired: Set<String> = []
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.pending.count } }

    /// Adds or replaces a timer (from a delivery, or folded from the topic).
    func schedule(_ timer: PendingTimer) {
        state.withLock { state in
            guard !state.fired.contains(timer.identity.messageId) else { return }
            state.pending[timer.identity.messageId] = timer
        }
    }

    /// Applies a tombstone read from the topic.
    func remove(messageId: String) {
        state.withLock { state in
            state.pending[messageId] = nil
            state.fired.remove(messageId)
        }
    }

    /// Takes the timers due at `now` in the given partitions, marking them fired.
    func takeDue(at now: Timestamp, in partitions: Set<Int32>) -> [PendingTimer] {
        state.withLock { state in
            let due = state.pending.values.filter { $0.expiresAt <= now && partitions.contains($0.partition) }
            for timer in due {
                state.pending[timer.identity.messageId] = nil
                state.fired.insert(timer.identity.messageId)
            }
            return due.sorted { $0.expiresAt < $1.expiresAt }
        }
    }

    /// The record value stored on the timers topic.
    static func encode(_ timer: PendingTimer) -> [UInt8] {
        var object: JSONObject = ["messageId": .string(timer.identity.messageId)]
        timer.identity.write(into: &object)
        object["expiresAt"] = .string(timer.expiresAt.rfc3339)
        return JSONValue.object(object).encoded()
    }

    /// Reads a timer record back; `nil` when it is not one.
    static func decode(_ bytes: [UInt8], partition: Int32) -> PendingTimer? {
        guard let object = (try? JSONValue(parsing: bytes))?.objectValue,
            let messageId = object["messageId"]?.stringValue,
            let expiresText = object["expiresAt"]?.stringValue,
            let expiresAt = try? Timestamp(rfc3339: expiresText)
        else { return nil }
        let identity = MessageIdentity(messageId: messageId, reading: object)
        return PendingTimer(identity: identity, expiresAt: expiresAt, partition: partition)
    }
}
