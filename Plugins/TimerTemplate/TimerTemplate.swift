public import PipelineCore

/// The `timer` template: a countdown, with alternate content shown when it ends.
///
/// Template-specific fields:
/// - `timer` (required): `{durationSeconds}` → `adb_tmr_dur`, or `{endsAt}` → `adb_tmr_end` (epoch
///   seconds), as decimal strings. When both are given only the duration is written. An `endsAt` not
///   after the event's `occurredAt` gets a warning; the pipeline expires such an event (cause `timer`)
///   instead of sending it (an already-expired timer is not shown on Android).
/// - `alternate`: `{title, body, expandedBody, image}` → `adb_title_alt`, `adb_body_alt`,
///   FCM `adb_body_ex_alt`, FCM `adb_image_alt` / APNs `adb_media_alt`. `alternate.title` is
///   required on both platforms (both SDKs need it). On FCM, `adb_body_ex_alt` falls back to the
///   alternate body and `adb_image_alt` to `image`: Android shows only those keys once the timer ends.
/// - `colors.timer` → `adb_clr_tmr`.
public struct TimerTemplate: TemplateRenderer {
    /// The wire value of `adb_template_type`.
    public static let wireType = "timer"
    static let features: StandardFields.Features = [.image, .expandedBodyOnAPNs, .timerColor]

    /// The names of this template's own members, prepared once.
    private enum Names {
        static let adbTitleAlt = PayloadObject.MemberName("adb_title_alt")
        static let adbBodyAlt = PayloadObject.MemberName("adb_body_alt")
        static let adbBodyExAlt = PayloadObject.MemberName("adb_body_ex_alt")
        static let adbImageAlt = PayloadObject.MemberName("adb_image_alt")
        static let adbMediaAlt = PayloadObject.MemberName("adb_media_alt")
        static let adbTmrDur = PayloadObject.MemberName("adb_tmr_dur")
        static let adbTmrEnd = PayloadObject.MemberName("adb_tmr_end")
    }

    /// The names of the content fields read, prepared once.
    private enum Fields {
        static let alternate = FieldName("alternate")
        static let body = FieldName("body")
        static let durationSeconds = FieldName("durationSeconds")
        static let endsAt = FieldName("endsAt")
        static let expandedBody = FieldName("expandedBody")
        static let image = FieldName("image")
        static let timer = FieldName("timer")
        static let title = FieldName("title")
    }

    /// Creates the template.
    public init() {}

    public var templateID: String { "timer" }

    public var summary: String {
        "Title, body and image with a countdown; alternate title, body and image once it ends."
    }

    public var fields: [TemplateField] {
        StandardFields.fieldDescriptions(features: Self.features) + [
            TemplateField("timer", "object", requiredOn: [.fcm, .apns], "the countdown: durationSeconds or endsAt"),
            TemplateField("timer.durationSeconds", "integer > 0", "adb_tmr_dur (wins over endsAt)"),
            TemplateField("timer.endsAt", "time", "adb_tmr_end, epoch seconds (one of durationSeconds/endsAt required)"),
            TemplateField("alternate.title", "string", requiredOn: [.fcm, .apns], "adb_title_alt"),
            TemplateField("alternate.body", "string", "adb_body_alt"),
            TemplateField("alternate.expandedBody", "string", "FCM adb_body_ex_alt (else alternate.body)"),
            TemplateField("alternate.image", "http(s) URL", "FCM adb_image_alt (else image); APNs adb_media_alt"),
        ]
    }

    public func render(_ input: RenderInput) throws(PipelineError) -> TemplatePayload {
        let content = input.content
        let platform = input.platform
        let standard = StandardFields(
            reading: content,
            platform: platform,
            features: Self.features,
            guidelines: platform == .fcm ? .fcm : .apnsTimer
        )
        let alternate = readAlternate(content)
        let timer = readTimer(content, after: input.request.occurredAt)

        switch platform {
        case .fcm:
            var data = standard.fcmData(templateType: Self.wireType)
            data.set(Names.adbTitleAlt, text: alternate.title)
            data.set(Names.adbBodyAlt, text: alternate.body)
            // Android's view once the timer ends shows these keys only, with no fallback: the expanded body falls
            // back to the alternate body (as `adb_body_ex` does to the body), the image to the running one (as iOS's
            // `adb_media_alt` does). Texts read in place (`if`): `??` would copy them (a reference count each).
            if alternate.expandedBody != nil {
                data.set(Names.adbBodyExAlt, text: alternate.expandedBody)
            } else {
                data.set(Names.adbBodyExAlt, text: alternate.body)
            }
            if alternate.image != nil {
                data.set(Names.adbImageAlt, text: alternate.image)
            } else {
                data.set(Names.adbImageAlt, text: standard.image)
            }
            data.set(timer.key, timer.value)
            return .fcm(data: data)
        case .apns:
            var fields = standard.apnsFields(templateType: Self.wireType)
            fields.set(Names.adbTitleAlt, text: alternate.title)
            fields.set(Names.adbBodyAlt, text: alternate.body)
            fields.set(Names.adbMediaAlt, text: alternate.image)
            fields.set(timer.key, timer.value)
            return .apns(aps: standard.apnsAps(), fields: fields)
        }
    }

    /// The texts shown once the timer ends, copied into the payload as they are (read as text, not `String`s).
    private func readAlternate(_ content: FieldReader) -> (title: ContentText?, body: ContentText?, expandedBody: ContentText?, image: ContentText?) {
        guard let reader = content.object(Fields.alternate) else {
            content.addIssue(.missingField, at: content.path(of: "alternate").appending("title"), "required")
            return (nil, nil, nil, nil)
        }
        let alternate = (
            title: reader.text(Fields.title, required: true),
            body: reader.text(Fields.body),
            expandedBody: reader.text(Fields.expandedBody),
            image: reader.imageURL(Fields.image)
        )
        // Neither SDK falls back to the running body once the timer ends: the view is blank there. (On FCM the
        // alternate expanded body falls back to the alternate body, see `render`.)
        if alternate.body == nil {
            reader.addWarning("body", "not set: the notification shows no body once the timer ends")
        }
        return alternate
    }

    private func readTimer(_ content: FieldReader, after occurredAt: Timestamp) -> (key: PayloadObject.MemberName, value: String?) {
        guard let reader = content.object(Fields.timer, required: true) else { return (Names.adbTmrDur, nil) }
        let duration = reader.integer(Fields.durationSeconds, in: 1...Int(Int32.max))
        let endsAt = reader.timestamp(Fields.endsAt)
        if let duration {
            if endsAt != nil { reader.addWarning("endsAt", "ignored: durationSeconds is set and wins") }
            return (Names.adbTmrDur, String(duration))
        }
        if let endsAt {
            // A countdown over before the event was made is not a broken event: the pipeline expires it (cause
            // timer), as it does one that ended while the event waited.
            if endsAt <= occurredAt {
                reader.addWarning("endsAt", "not after occurredAt (\(occurredAt.rfc3339)): the countdown is over before the event was made")
            }
            return (Names.adbTmrEnd, String(endsAt.epochSeconds))
        }
        if !reader.contains(Fields.durationSeconds), !reader.contains(Fields.endsAt) {
            content.addIssue(.missingField, "timer", "requires durationSeconds or endsAt")
        }
        return (Names.adbTmrDur, nil)
    }
}
