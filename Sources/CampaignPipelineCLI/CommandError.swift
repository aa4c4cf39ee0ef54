/// A failure a command reports in one sentence, without the usage text (which is for mistakes in the
/// command line itself: those are `ValidationError`s).
struct CommandError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
