/// The issues and warnings collected while one event is decoded and rendered.
///
/// A per-render scratch object: created by the registry for one event, shared by that event's
/// ``FieldReader``s, and dropped when the render ends. It never crosses a concurrency domain.
final class RenderDiagnostics {
    var issues: [PipelineError.Issue] = []
    var warnings: [RenderWarning] = []
    let personalizer: Personalizer?
    /// Bytes reused by every personalized string of the render (one buffer per render, not one per string).
    var personalizationScratch: [UInt8] = []

    init(personalizer: Personalizer? = nil) {
        self.personalizer = personalizer
    }
}
