/// The fields of a value type kept in one shared, immutable box (``PushRequest``, ``RenderedNotification``).
///
/// Copying the value copies one reference instead of retaining every string, array and object among its fields.
/// Changing a field gives the value a box of its own with the change, so copies never affect each other; reading a
/// field borrows it from the box.
struct SharedFields<Fields: Sendable>: Sendable {
    private final class Box: Sendable {
        let fields: Fields

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private var box: Box

    init(_ fields: Fields) {
        box = Box(fields)
    }

    /// The fields, borrowed from the box.
    var fields: Fields {
        _read { yield box.fields }
    }

    /// Replaces the box with a changed copy of the fields.
    mutating func update(_ change: (inout Fields) -> Void) {
        var fields = box.fields
        change(&fields)
        box = Box(fields)
    }
}
