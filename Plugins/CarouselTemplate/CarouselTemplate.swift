public import PipelineCore

/// The `carousel` template (wire type and alias `car`): a series of images with captions.
///
/// Template-specific fields:
/// - `items` (required): `{image, text, uri}` → `adb_items` of `{img, txt, uri}`; 3-5 on FCM (a JSON
///   *string*), 2-5 on APNs (a JSON *array*). Every item needs an `image`. An item without `uri`
///   gets `link.uri`: the iOS SDK and Android's auto mode ignore `adb_uri` for carousel taps.
/// - `mode`: `auto`|`manual` → `adb_car_mode` (both platforms).
/// - `layout`: `default`|`filmstrip` → FCM `adb_car_layout`, always written (default `default`):
///   the Android SDK does not post a carousel without it. A filmstrip is a manual carousel: without a `mode`, FCM
///   gets `adb_car_mode` `manual` (the Android SDK would take it for an automatic one, which has no filmstrip), and
///   with `mode` `auto` a warning.
public struct CarouselTemplate: TemplateRenderer {
    /// The wire value of `adb_template_type`.
    public static let wireType = "car"
    /// Allowed item counts per platform.
    public static let itemCounts = Dictionary(uniqueKeysWithValues: Platform.allCases.map { ($0, itemCount(on: $0)) })

    /// The allowed item count on `platform` (a switch: rendering does not hash the platform for it).
    public static func itemCount(on platform: Platform) -> ClosedRange<Int> {
        switch platform {
        case .fcm: 3...5
        case .apns: 2...5
        }
    }
    static let features: StandardFields.Features = []

    /// The names of this template's own members, prepared once.
    private enum Names {
        static let adbCarMode = PayloadObject.MemberName("adb_car_mode")
        static let adbCarLayout = PayloadObject.MemberName("adb_car_layout")
        static let adbItems = PayloadObject.MemberName("adb_items")
    }

    /// The names of an item's members in `adb_items`, prepared once.
    private enum ItemKeys {
        static let img = JSONWriter.Key("img")
        static let txt = JSONWriter.Key("txt")
        static let uri = JSONWriter.Key("uri")
    }

    /// The names of the content fields read, prepared once.
    private enum Fields {
        static let image = FieldName("image")
        static let items = FieldName("items")
        static let layout = FieldName("layout")
        static let mode = FieldName("mode")
        static let text = FieldName("text")
        static let uri = FieldName("uri")
    }

    /// Creates the template.
    public init() {}

    public var templateID: String { "carousel" }
    public var aliases: [String] { ["car"] }

    public var summary: String {
        "A carousel of 3-5 (FCM) or 2-5 (APNs) images with captions, automatic or manual."
    }

    public var fields: [TemplateField] {
        StandardFields.fieldDescriptions(features: Self.features) + [
            TemplateField("items[]", "array, 3-5 on FCM, 2-5 on APNs", requiredOn: [.fcm, .apns], "adb_items (FCM: JSON string; APNs: array)"),
            TemplateField("items[].image", "http(s) URL", requiredOn: [.fcm, .apns], "img"),
            TemplateField("items[].text", "string", "txt"),
            TemplateField("items[].uri", "string (URI)", "uri (defaults to link.uri)"),
            TemplateField("mode", "auto|manual", "adb_car_mode"),
            TemplateField("layout", "default|filmstrip", "FCM adb_car_layout (always written, default \"default\"; filmstrip implies mode manual)"),
        ]
    }

    public func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        let platform = input.platform
        let standard = StandardFields(
            reading: content,
            platform: platform,
            features: Self.features,
            guidelines: platform == .fcm ? .fcm : .apns
        )
        let mode = content.choice(Fields.mode, from: ["auto", "manual"])
        let layout = content.choice(Fields.layout, from: ["default", "filmstrip"])
        let defaultURI = standard.link?.uri

        // The items are read as they are written, straight into the payload.
        switch platform {
        case .fcm:
            var data = standard.fcmData(templateType: Self.wireType)
            // Filmstrip is a manual carousel: the Android SDK reads the layout only in manual mode, and takes a
            // carousel without a mode for an automatic one.
            if layout == "filmstrip", mode == "auto" {
                content.addWarning("layout", "'filmstrip' has no effect with mode 'auto': the Android SDK shows a filmstrip only in manual mode")
            }
            data.set(Names.adbCarMode, mode ?? (layout == "filmstrip" ? "manual" : nil))
            data.set(Names.adbCarLayout, layout ?? "default")
            data.set(Names.adbItems, jsonTextWrittenBy: { readItems(content, platform: platform, defaultURI: defaultURI, into: &$0) })
            return .fcm(data: data)
        case .apns:
            var fields = standard.apnsFields(templateType: Self.wireType)
            fields.set(Names.adbCarMode, mode)
            fields.set(Names.adbItems, jsonWrittenBy: { readItems(content, platform: platform, defaultURI: defaultURI, into: &$0) })
            return .apns(aps: standard.apnsAps(), fields: fields)
        }
    }

    /// Reads the items and writes them into `items` as a JSON array of `{img, txt, uri}` objects (no tree of
    /// values); returns `true`: the array is set even when empty.
    private func readItems(_ content: FieldReader, platform: Platform, defaultURI: ContentText?, into items: inout JSONWriter) -> Bool {
        items.beginArray()
        defer { items.endArray() }
        guard let elements = content.objectElements(Fields.items, required: true) else { return true }
        let range = Self.itemCount(on: platform)
        if !range.contains(elements.count) {
            content.addIssue(.invalidField, "items", "must have \(range.lowerBound) to \(range.upperBound) items on \(platform), found \(elements.count)")
        }
        for reader in elements {
            // Copied into the payload as they are: read as text, not made `String`s.
            let image = reader.imageURL(Fields.image, required: true)
            let text = reader.text(Fields.text)
            let uri = reader.text(Fields.uri)
            // Texts read in place (`!= nil`, `if`): `guard let` or `??` would copy them (a reference count each).
            guard image != nil else { continue }
            items.nextElement()
            items.beginObject()
            items.member(ItemKeys.img, text: image)
            items.member(ItemKeys.txt, text: text)
            // An empty uri (as given, or once personalized) is none: the phone would open the app instead of the link.
            if uri?.isEmpty == false {
                items.member(ItemKeys.uri, text: uri)
            } else {
                items.member(ItemKeys.uri, text: defaultURI)
            }
            items.endObject()
        }
        return true
    }
}
