import Synchronization

/// Schedules a delivered notification's timer once the two records it follows are acknowledged: its
/// `push.delivered` (so the expiry is written after it) and its timer record (so the tombstone is written after it).
/// Scheduled earlier, a retried `push.delivered` could land after the expiry, or a retried timer record after its
/// tombstone, making the timer live again at the next start.
final class TimerArming: Sendable {
    private let timer: TimerBook.PendingTimer
    private let book: TimerBook
    private let remaining = Atomic<Int>(2)

    init(_ timer: TimerBook.PendingTimer, in book: TimerBook) {
        self.timer = timer
        self.book = book
    }

    /// One of the two records is acknowledged; the second schedules the timer.
    func acknowledged() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            book.schedule(timer)
        }
    }
}
