public import PipelineCore

/// The `basic` template: title, body, image, link, up to three action buttons and "remind later".
///
/// Template-specific fields (FCM only; read and validated on both platforms):
/// - `buttons`: 1-3 `{label, uri, type}` (at most 2 with `remindLater`) → `adb_act`, a JSON string.
///   `uri` may be empty or absent only for `DISMISS`/`OPENAPP` (written as `""`).
/// - `remindLater`: `{label, at}` → `adb_rem_txt` and `adb_rem_ts` (epoch seconds); both required,
///   `at` must be after the event's `occurredAt`.
public struct BasicTemplate: TemplateRenderer {
    /// The wire value of `adb_template_type`.
    public static let wireType = "basic"
    static let features: StandardFields.Features = [.image, .expandedBodyOnAPNs]

    /// The names of this template's own members, prepared once.
    private enum Names {
        static let adbAct = PayloadObject.MemberName("adb_act")
        static let adbRemTxt = PayloadObject.MemberName("adb_rem_txt")
        static let adbRemTs = PayloadObject.MemberName("adb_rem_ts")
    }

    /// The names of a button's members in `adb_act`, prepared once.
    private enum ButtonKeys {
        static let label = JSONWriter.Key("label")
        static let type = JSONWriter.Key("type")
        static let uri = JSONWriter.Key("uri")
    }

    /// The names of the content fields read, prepared once.
    private enum Fields {
        static let at = FieldName("at")
        static let buttons = FieldName("buttons")
        static let label = FieldName("label")
        static let remindLater = FieldName("remindLater")
        static let `type` = FieldName("type")
        static let uri = FieldName("uri")
    }

    /// Creates the template.
    public init() {}

    public var templateID: String { "basic" }

    public var summary: String {
        "Title, body, image and link, with up to three buttons and a remind-later action (FCM)."
    }

    public var fields: [TemplateField] {
        StandardFields.fieldDescriptions(features: Self.features) + [
            TemplateField("buttons[]", "array, 1-3 (2 with remindLater)", "FCM adb_act (JSON string)"),
            TemplateField("buttons[].label", "string", requiredOn: [.fcm, .apns], "button text"),
            TemplateField("buttons[].uri", "string (URI)", "required for WEBURL/DEEPLINK"),
            TemplateField("buttons[].type", LinkType.wireValues.joined(separator: "|"), requiredOn: [.fcm, .apns], "what the button does"),
            TemplateField("remindLater.label", "string", "FCM adb_rem_txt (required with remindLater)"),
            TemplateField("remindLater.at", "time", "FCM adb_rem_ts, epoch seconds (required with remindLater)"),
        ]
    }

    public func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        let standard = StandardFields(
            reading: content,
            platform: input.platform,
            features: Self.features,
            guidelines: input.platform == .fcm ? .fcm : .apns
        )
        let remindLater = readRemindLater(content, after: input.request.occurredAt)
        let hasRemindLater = content.contains(Fields.remindLater)

        switch input.platform {
        case .fcm:
            var data = standard.fcmData(templateType: Self.wireType)
            // Read as they are written, straight into the payload; left out when none is valid.
            data.set(Names.adbAct, jsonTextWrittenBy: { buttons in
                buttons.beginArray()
                let valid = readButtons(content, hasRemindLater: hasRemindLater) { label, uri, type in
                    buttons.nextElement()
                    buttons.beginObject()
                    buttons.member(ButtonKeys.label, text: label)
                    if uri != nil { buttons.member(ButtonKeys.uri, text: uri) } else { buttons.member(ButtonKeys.uri, "") }
                    buttons.member(ButtonKeys.type, type.rawValue)
                    buttons.endObject()
                }
                buttons.endArray()
                return valid > 0
            })
            if let remindLater {
                data.set(Names.adbRemTxt, remindLater.label)
                data.set(Names.adbRemTs, String(remindLater.at.epochSeconds))
            }
            return .fcm(data: data)
        case .apns:
            // Checked, not sent: APNs has no buttons member.
            _ = readButtons(content, hasRemindLater: hasRemindLater) { _, _, _ in }
            return .apns(aps: standard.apnsAps(), fields: standard.apnsFields(templateType: Self.wireType))
        }
    }

    private func readRemindLater(_ content: FieldReader, after occurredAt: Timestamp) -> (label: String, at: Timestamp)? {
        guard let reader = content.object(Fields.remindLater) else { return nil }
        let label = reader.string(Fields.label, required: true)
        let at = reader.timestamp(Fields.at, required: true)
        if let at, at <= occurredAt {
            reader.addIssue(.invalidField, "at", "must be after occurredAt (\(occurredAt.rfc3339)), found \(at.rfc3339)")
            return nil
        }
        guard let label, let at else { return nil }
        return (label, at)
    }

    /// Reads and checks the buttons, and hands each valid one to `button` (its label, its URI if it has one, its type);
    /// returns how many were valid.
    private func readButtons(
        _ content: FieldReader,
        hasRemindLater: Bool,
        _ button: (_ label: ContentText?, _ uri: ContentText?, _ type: LinkType) -> Void
    ) -> Int {
        guard let elements = content.objectElements(Fields.buttons) else { return 0 }
        let limit = hasRemindLater ? 2 : 3
        if elements.count < 1 || elements.count > limit {
            let rule = hasRemindLater ? "1 to 2 buttons when remindLater is set" : "1 to 3 buttons"
            content.addIssue(.invalidField, "buttons", "must have \(rule), found \(elements.count)")
        }
        var valid = 0
        for reader in elements {
            let label = reader.text(Fields.label, required: true)
            let type = reader.choiceIndex(Fields.type, from: LinkType.wireValues, required: true)
                .map { LinkType.allCases[$0] }
            let needsURI = type == .webURL || type == .deepLink
            let uri = reader.text(Fields.uri, required: needsURI)
            // Texts read in place (`!= nil`, `if`): `guard let` or `??` would copy them (a reference count each).
            guard label != nil, let type else { continue }
            valid += 1
            button(label, uri, type)
        }
        return valid
    }
}
