import Synchronization

/// A payload object one worker uses again for every render: the APNs `aps` object is written, copied into the payload,
/// then handed back (``TemplateRegistry``), so that a worker rendering event after event allocates its bytes and its
/// members' places once instead of for each event. A ``RenderScratch`` keeps one; ``StandardFields`` takes from it.
///
/// Taking and handing back are locked: a ``StandardFields`` is `Sendable`, and may take from another thread than the
/// render's. An object still shared when it is taken again is copied as it is emptied, as any array is, so a template
/// that keeps one loses nothing.
final class PayloadObjectPool: Sendable {
    private let spare = Mutex<PayloadObject?>(nil)

    /// An empty object: the one handed back last, its memory kept, or else a new one with room for `bytes` and
    /// `members`.
    func take(reservingBytes bytes: Int, members: Int) -> PayloadObject {
        guard var object = spare.withLock({ $0.take() }) else {
            return PayloadObject(reservingBytes: bytes, members: members)
        }
        object.removeAll()
        return object
    }

    /// Keeps `object` for the next ``take(reservingBytes:members:)``.
    func handBack(_ object: consuming PayloadObject) {
        spare.withLock { $0 = object }
    }
}
