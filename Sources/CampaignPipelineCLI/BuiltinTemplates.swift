import BasicTemplate
import CarouselTemplate
public import PipelineCore
import TimerTemplate

/// The template plugins that ship with the project, registered explicitly (plugins never register
/// themselves).
public enum BuiltinTemplates {
    /// The shipped plugins, in listing order.
    public static var renderers: [any TemplateRenderer] {
        [BasicTemplate(), CarouselTemplate(), TimerTemplate()]
    }

    /// A registry of ``renderers``: `basic`, `carousel` (alias `car`) and `timer`, and any plugin a project added
    /// there. Add your own plugins to a copy with ``TemplateRegistry/registering(_:)``.
    public static var registry: TemplateRegistry {
        TemplateRegistry(renderers)
    }
}
