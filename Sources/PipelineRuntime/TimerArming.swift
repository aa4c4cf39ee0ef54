import KafkaClient

/// A delivered timer notification's timer, written and scheduled in turn, each step once the record before it is
/// acknowledged:
///
/// 1. its `push.delivered` is acknowledged: its timer record is sent. Any reader of the timers topic (the instance
///    that owns its partition next, or this one after a restart) schedules a timer it reads, so a record written
///    with its `push.delivered` still retrying could fire an expiry before that `push.delivered`, or with none at
///    all when the instance died first (found by review);
/// 2. its timer record is acknowledged: the timer is scheduled here, so its tombstone is written after the record
///    (a retried record landing after its tombstone would make the timer live again at the next start).
///
/// A timer record is not sent for an event whose partition moved away (or was read again from an earlier offset)
/// meanwhile: the event is not committed here, and is delivered again, timer and all, where it is read next. Nor for
/// one whose `push.delivered` the cluster refused for its size (``deliveredGivenUp()``): that record is written again
/// with its long texts cut, and the timer record, with the same ids, is not written.
final class TimerArming: Sendable {
    private let timer: TimerBook.PendingTimer
    private let book: TimerBook
    private let record: KafkaProducerRecord
    private let ticket: EventTicket

    /// - Parameters:
    ///   - record: the timer's record on the timers topic.
    ///   - ticket: the event's; the timer record is one unit of it.
    init(_ timer: TimerBook.PendingTimer, record: KafkaProducerRecord, ticket: EventTicket, in book: TimerBook) {
        self.timer = timer
        self.record = record
        self.ticket = ticket
        self.book = book
    }

    /// The `push.delivered` is acknowledged: the timer record's output to send now, or `nil` (its unit done) when the
    /// event's partition is no longer read here.
    func deliveredAcknowledged() -> OutputSender.Output? {
        guard !ticket.tracker.isRetired else {
            ticket.finishUnit()
            return nil
        }
        book.beginArming(timer)
        return OutputSender.Output(record: record, acknowledgement: .timerRecord(self, ticket))
    }

    /// The `push.delivered` was refused for good (``OutputSender/isPermanent(_:)``; it is written again with its long
    /// texts cut): the timer is given up (its record and its expiry, with the same ids, would be refused too), and its
    /// record's unit is done.
    func deliveredGivenUp() {
        ticket.finishUnit()
    }

    /// The timer record is acknowledged: the timer is scheduled (unless its tombstone was read meanwhile:
    /// ``TimerBook/finishArming(_:)``).
    func recordAcknowledged() {
        book.finishArming(timer)
    }
}
