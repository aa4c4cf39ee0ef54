/// The content fields every shipped template shares (title, body, link, colours, …), read and
/// validated once and written to either platform as the contract's table says.
///
/// A building block for template plugins: read it first, then add the template's own keys to the
/// FCM data or APNs fields it produces.
public struct StandardFields: Sendable {
    /// Optional groups of fields that only some templates support.
    public struct Features: OptionSet, Sendable {
        /// The bits.
        public let rawValue: Int
        /// Creates a set from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// `image` → FCM `adb_image`, APNs `adb_media`.
        public static let image = Features(rawValue: 1 << 0)
        /// `expandedBody` is also written on APNs (`adb_body_ex`); it is always written on FCM.
        public static let expandedBodyOnAPNs = Features(rawValue: 1 << 1)
        /// `colors.timer` → `adb_clr_tmr`.
        public static let timerColor = Features(rawValue: 1 << 2)
    }

    /// `link`: where a tap goes.
    public struct Link: Sendable, Hashable {
        /// `adb_uri`.
        public var uri: ContentText
        /// `adb_a_type` (FCM only; required there when a URI is set).
        public var type: LinkType?
    }

    /// Colours, six hex digits without `#`.
    public struct Colors: Sendable, Hashable {
        /// `colors.title` → `adb_clr_title`.
        public var title: String?
        /// `colors.body` → `adb_clr_body`.
        public var body: String?
        /// `colors.background` → `adb_clr_bg`.
        public var background: String?
        /// `colors.smallIcon` → FCM `adb_clr_icon`.
        public var smallIcon: String?
        /// `colors.timer` → `adb_clr_tmr` (timer only).
        public var timer: String?
    }

    /// `version` → `adb_version` (default `"1"`).
    public var version = "1"
    /// `title` → FCM `adb_title`, APNs `aps.alert.title` (required).
    public var title: ContentText? {
        get { content(texts.title) }
        set { texts.title = newValue.map { DocumentText($0, in: source) } }
    }
    /// `subtitle` → APNs `aps.alert.subtitle`.
    public var subtitle: ContentText? {
        get { content(texts.subtitle) }
        set { texts.subtitle = newValue.map { DocumentText($0, in: source) } }
    }
    /// `body` → FCM `adb_body`, APNs `aps.alert.body` (required).
    public var body: ContentText? {
        get { content(texts.body) }
        set { texts.body = newValue.map { DocumentText($0, in: source) } }
    }
    /// `expandedTitle` → APNs `adb_title_ex`.
    public var expandedTitle: ContentText? {
        get { content(texts.expandedTitle) }
        set { texts.expandedTitle = newValue.map { DocumentText($0, in: source) } }
    }
    /// `expandedBody` → `adb_body_ex` (FCM; APNs with ``Features/expandedBodyOnAPNs``).
    public var expandedBody: ContentText? {
        get { content(texts.expandedBody) }
        set { texts.expandedBody = newValue.map { DocumentText($0, in: source) } }
    }
    /// `image` → FCM `adb_image`, APNs `adb_media` (with ``Features/image``).
    public var image: ContentText? {
        get { content(texts.image) }
        set { texts.image = newValue.map { DocumentText($0, in: source) } }
    }
    /// `link` → `adb_uri` (+ FCM `adb_a_type`).
    public var link: Link? {
        get { content(texts.linkURI).map { Link(uri: $0, type: linkType) } }
        set {
            texts.linkURI = newValue.map { DocumentText($0.uri, in: source) }
            linkType = newValue?.type
        }
    }
    /// `sound` → FCM `adb_sound`, APNs `aps.sound`.
    public var sound: ContentText? {
        get { content(texts.sound) }
        set { texts.sound = newValue.map { DocumentText($0, in: source) } }
    }
    /// `badge` → FCM `adb_n_count` (string), APNs `aps.badge` (number).
    public var badge: Int?
    /// `threadId` → APNs `aps.thread-id`.
    public var threadId: ContentText? {
        get { content(texts.threadId) }
        set { texts.threadId = newValue.map { DocumentText($0, in: source) } }
    }
    /// `icon` → FCM `adb_icon` (the legacy small icon).
    public var icon: ContentText? {
        get { content(texts.icon) }
        set { texts.icon = newValue.map { DocumentText($0, in: source) } }
    }
    /// `smallIcon` → FCM `adb_small_icon`.
    public var smallIcon: ContentText? {
        get { content(texts.smallIcon) }
        set { texts.smallIcon = newValue.map { DocumentText($0, in: source) } }
    }
    /// `largeIcon` → FCM `adb_large_icon`.
    public var largeIcon: ContentText? {
        get { content(texts.largeIcon) }
        set { texts.largeIcon = newValue.map { DocumentText($0, in: source) } }
    }
    /// `channelId` → FCM `adb_channel_id` (non-empty).
    public var channelId: ContentText? {
        get { content(texts.channelId) }
        set { texts.channelId = newValue.map { DocumentText($0, in: source) } }
    }
    /// `notificationPriority` → FCM `adb_n_priority` (one of ``notificationPriorities``).
    public var notificationPriority: String?
    /// `tag` → FCM `adb_tag`.
    public var tag: ContentText? {
        get { content(texts.tag) }
        set { texts.tag = newValue.map { DocumentText($0, in: source) } }
    }
    /// `ticker` → FCM `adb_ticker`.
    public var ticker: ContentText? {
        get { content(texts.ticker) }
        set { texts.ticker = newValue.map { DocumentText($0, in: source) } }
    }
    /// `sticky` → FCM `adb_sticky` (`"true"`/`"false"`).
    public var sticky: Bool?
    /// `colors`, six hex digits each, without `#`.
    public var colors = Colors()
    /// The features this value was read with.
    public let features: Features

    /// The document the fields were read from and the recipient's attributes: the texts still in its bytes are kept
    /// as their nodes (``DocumentText``), so that copying and dropping them counts no reference to it, and
    /// personalized ones are filled from the attributes as they are written.
    private let source: TextSource
    /// Where ``apnsAps()`` takes its object from: the render's scratch.
    private let objects: PayloadObjectPool
    /// The text fields, exposed as the ``ContentText`` properties above.
    private var texts = Texts()
    /// `link.type`; `nil` when there is no link.
    private var linkType: LinkType?

    private struct Texts {
        var title, subtitle, body, expandedTitle, expandedBody, image, linkURI: DocumentText?
        var sound, threadId, icon, smallIcon, largeIcon, channelId, tag, ticker: DocumentText?
    }

    /// Android notification priorities the SDK maps (`adb_n_priority`).
    public static let notificationPriorities = [
        "PRIORITY_DEFAULT", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_HIGH", "PRIORITY_MAX",
    ]

    /// Reads and validates the shared fields from `content`, recording issues and text-guideline
    /// warnings there.
    ///
    /// - Parameters:
    ///   - content: the content reader.
    ///   - platform: the platform being rendered (decides platform-specific requirements).
    ///   - features: the optional groups this template supports.
    ///   - guidelines: the recommended text lengths on `platform`.
    public init(reading content: borrowing FieldReader, platform: Platform, features: Features, guidelines: TextGuidelines) {
        // Made empty, then filled in place: written as one initializer, the fields were built in a temporary and
        // copied out at the end (a retain and a release per field, seen in the compiled code). `content` is
        // borrowed: an initializer's parameters are otherwise the callee's to release (a retain by the caller).
        self.init(features: features, source: content.textSource, objects: content.diagnostics.objects)
        read(content, platform: platform, guidelines: guidelines)
    }

    private init(features: Features, source: TextSource, objects: PayloadObjectPool) {
        self.features = features
        self.source = source
        self.objects = objects
    }

    private mutating func read(_ content: FieldReader, platform: Platform, guidelines: TextGuidelines) {
        let fields = Fields.shared  // one check of its lazy initialisation, not one per name
        version = content.string(fields.version, personalize: false) ?? "1"
        texts.title = content.documentText(fields.title, required: true)
        texts.subtitle = content.documentText(fields.subtitle)
        texts.body = content.documentText(fields.body, required: true)
        texts.expandedTitle = content.documentText(fields.expandedTitle)
        texts.expandedBody = content.documentText(fields.expandedBody)
        if features.contains(.image) { texts.image = content.documentImageURL(fields.image) }
        if let linkReader = content.object(fields.link) {
            texts.linkURI = linkReader.documentText(fields.uri, required: true)
            let isTypeRequired = platform == .fcm && texts.linkURI != nil
            let type = linkReader.choiceIndex(fields.type, from: LinkType.wireValues, required: isTypeRequired)
            if texts.linkURI != nil { linkType = type.map { LinkType.allCases[$0] } }
        }
        texts.sound = content.documentText(fields.sound)
        badge = content.integer(fields.badge, in: 0...Int(Int32.max))
        texts.threadId = content.documentText(fields.threadId)
        texts.icon = content.documentText(fields.icon)
        texts.smallIcon = content.documentText(fields.smallIcon)
        texts.largeIcon = content.documentText(fields.largeIcon)
        // Empty, it is left out (the Android SDK would use an empty channel id as is).
        texts.channelId = content.documentText(fields.channelId)
        notificationPriority = content.choice(fields.notificationPriority, from: Self.notificationPriorities)
        texts.tag = content.documentText(fields.tag)
        texts.ticker = content.documentText(fields.ticker)
        sticky = content.boolean(fields.sticky)
        if let colorReader = content.object(fields.colors) {
            colors.title = colorReader.color(fields.title)
            colors.body = colorReader.color(fields.body)
            colors.background = colorReader.color(fields.background)
            colors.smallIcon = colorReader.color(fields.smallIcon)
            if features.contains(.timerColor) { colors.timer = colorReader.color(fields.timer) }
        }
        if texts.icon != nil, texts.smallIcon != nil {
            content.addWarning("icon", "ignored by the Android SDK when smallIcon is set")
        }
        TextGuidelines.check(texts.title, from: source, limit: guidelines.title, key: "title", platform: platform, in: content)
        TextGuidelines.check(texts.body, from: source, limit: guidelines.body, key: "body", platform: platform, in: content)
    }

    /// The names of the fields read, prepared once (``FieldName``). One instance, taken once per read
    /// (``shared``): each read of a `static let` runs a check of its lazy initialisation.
    private final class Fields: Sendable {
        let background = FieldName("background")
        let badge = FieldName("badge")
        let body = FieldName("body")
        let channelId = FieldName("channelId")
        let colors = FieldName("colors")
        let expandedBody = FieldName("expandedBody")
        let expandedTitle = FieldName("expandedTitle")
        let icon = FieldName("icon")
        let image = FieldName("image")
        let largeIcon = FieldName("largeIcon")
        let link = FieldName("link")
        let notificationPriority = FieldName("notificationPriority")
        let smallIcon = FieldName("smallIcon")
        let sound = FieldName("sound")
        let sticky = FieldName("sticky")
        let subtitle = FieldName("subtitle")
        let tag = FieldName("tag")
        let threadId = FieldName("threadId")
        let ticker = FieldName("ticker")
        let timer = FieldName("timer")
        let title = FieldName("title")
        let `type` = FieldName("type")
        let uri = FieldName("uri")
        let version = FieldName("version")

        static let shared = Fields()
    }

    /// `text` as ``ContentText``.
    private func content(_ text: DocumentText?) -> ContentText? {
        text?.content(in: source)
    }

    /// The FCM `data` members for these fields, in a fixed order, all strings.
    ///
    /// `adb_body_ex` falls back to the body: the Android SDK's expanded layout shows only
    /// `adb_body_ex`, so without it the expanded notification has no body text.
    public func fcmData(templateType: String) -> PayloadObject {
        let keys = Keys.shared  // one check of its lazy initialisation, not one per name
        // These 23 keys and the template's own: one allocation each for the bytes and the members' places.
        var data = PayloadObject(reservingBytes: 1536, members: 32)
        data.appendNew(keys.adbVersion, version)
        data.appendNew(keys.adbTemplateType, templateType)
        data.appendNew(keys.adbTitle, texts.title, from: source)
        data.appendNew(keys.adbBody, texts.body, from: source)
        // Not `expandedBody ?? body`, which would copy the text.
        if texts.expandedBody != nil {
            data.appendNew(keys.adbBodyEx, texts.expandedBody, from: source)
        } else {
            data.appendNew(keys.adbBodyEx, texts.body, from: source)
        }
        data.appendNew(keys.adbSound, texts.sound, from: source)
        data.appendNew(keys.adbIcon, texts.icon, from: source)
        data.appendNew(keys.adbSmallIcon, texts.smallIcon, from: source)
        data.appendNew(keys.adbLargeIcon, texts.largeIcon, from: source)
        data.appendNew(keys.adbNCount, badge.map(String.init))
        data.appendNew(keys.adbNPriority, notificationPriority)
        data.appendNew(keys.adbChannelId, texts.channelId, from: source)
        data.appendNew(keys.adbImage, texts.image, from: source)
        data.appendNew(keys.adbUri, texts.linkURI, from: source)
        data.appendNew(keys.adbAType, linkType?.rawValue)
        data.appendNew(keys.adbTag, texts.tag, from: source)
        data.appendNew(keys.adbSticky, sticky.map { $0 ? "true" : "false" })
        data.appendNew(keys.adbTicker, texts.ticker, from: source)
        data.appendNew(keys.adbClrTitle, colors.title)
        data.appendNew(keys.adbClrBody, colors.body)
        data.appendNew(keys.adbClrBg, colors.background)
        data.appendNew(keys.adbClrIcon, colors.smallIcon)
        data.appendNew(keys.adbClrTmr, colors.timer)
        return data
    }

    /// The APNs `aps` members (`alert`, `sound`, `badge`, `thread-id`) for these fields.
    public func apnsAps() -> PayloadObject {
        let keys = Keys.shared  // one check of its lazy initialisation, not one per name
        // Room for these four, and `category` and `mutable-content` added by the registry.
        let textBytes = (texts.title?.utf8Count(in: source) ?? 0) + (texts.subtitle?.utf8Count(in: source) ?? 0)
            + (texts.body?.utf8Count(in: source) ?? 0)
        // The render's own object, used again for each (the registry hands it back once it is in the payload).
        var aps = objects.take(reservingBytes: textBytes + 192, members: 4)
        aps.appendNew(keys.alert) { alert in
            alert.member(keys.alertTitle, text: texts.title, from: source)
            alert.member(keys.alertSubtitle, text: texts.subtitle, from: source)
            alert.member(keys.alertBody, text: texts.body, from: source)
        }
        aps.appendNew(keys.sound, texts.sound, from: source)
        aps.appendNew(keys.badge, badge)
        aps.appendNew(keys.threadId, texts.threadId, from: source)
        return aps
    }

    /// The APNs top-level `adb_*` members for these fields, in a fixed order.
    public func apnsFields(templateType: String) -> PayloadObject {
        let keys = Keys.shared  // one check of its lazy initialisation, not one per name
        // These ten and the template's own: one allocation each for the bytes and the members' places.
        var fields = PayloadObject(reservingBytes: 1024, members: 16)
        fields.appendNew(keys.adbTemplateType, templateType)
        fields.appendNew(keys.adbVersion, version)
        fields.appendNew(keys.adbTitleEx, texts.expandedTitle, from: source)
        if features.contains(.expandedBodyOnAPNs) { fields.appendNew(keys.adbBodyEx, texts.expandedBody, from: source) }
        fields.appendNew(keys.adbMedia, texts.image, from: source)
        fields.appendNew(keys.adbUri, texts.linkURI, from: source)
        fields.appendNew(keys.adbClrTitle, colors.title)
        fields.appendNew(keys.adbClrBody, colors.body)
        fields.appendNew(keys.adbClrBg, colors.background)
        fields.appendNew(keys.adbClrTmr, colors.timer)
        return fields
    }

    /// The members' names, written once (quoted, with their colon) instead of for every payload. One instance, taken
    /// once per payload, as ``Fields``.
    private final class Keys: Sendable {
        let adbAType = PayloadObject.MemberName("adb_a_type")
        let adbBody = PayloadObject.MemberName("adb_body")
        let adbBodyEx = PayloadObject.MemberName("adb_body_ex")
        let adbChannelId = PayloadObject.MemberName("adb_channel_id")
        let adbClrBg = PayloadObject.MemberName("adb_clr_bg")
        let adbClrBody = PayloadObject.MemberName("adb_clr_body")
        let adbClrIcon = PayloadObject.MemberName("adb_clr_icon")
        let adbClrTitle = PayloadObject.MemberName("adb_clr_title")
        let adbClrTmr = PayloadObject.MemberName("adb_clr_tmr")
        let adbIcon = PayloadObject.MemberName("adb_icon")
        let adbImage = PayloadObject.MemberName("adb_image")
        let adbLargeIcon = PayloadObject.MemberName("adb_large_icon")
        let adbMedia = PayloadObject.MemberName("adb_media")
        let adbNCount = PayloadObject.MemberName("adb_n_count")
        let adbNPriority = PayloadObject.MemberName("adb_n_priority")
        let adbSmallIcon = PayloadObject.MemberName("adb_small_icon")
        let adbSound = PayloadObject.MemberName("adb_sound")
        let adbSticky = PayloadObject.MemberName("adb_sticky")
        let adbTag = PayloadObject.MemberName("adb_tag")
        let adbTemplateType = PayloadObject.MemberName("adb_template_type")
        let adbTicker = PayloadObject.MemberName("adb_ticker")
        let adbTitle = PayloadObject.MemberName("adb_title")
        let adbTitleEx = PayloadObject.MemberName("adb_title_ex")
        let adbUri = PayloadObject.MemberName("adb_uri")
        let adbVersion = PayloadObject.MemberName("adb_version")
        let alert = PayloadObject.MemberName("alert")
        let alertBody = JSONWriter.Key("body")
        let alertSubtitle = JSONWriter.Key("subtitle")
        let alertTitle = JSONWriter.Key("title")
        let badge = PayloadObject.MemberName("badge")
        let sound = PayloadObject.MemberName("sound")
        let threadId = PayloadObject.MemberName("thread-id")

        static let shared = Keys()
    }

    /// Descriptions of the shared fields for the `templates` command.
    public static func fieldDescriptions(features: Features) -> [TemplateField] {
        var list: [TemplateField] = [
            TemplateField("version", "string", "payload version (default \"1\"); adb_version"),
            TemplateField("title", "string", requiredOn: [.fcm, .apns], "FCM adb_title; APNs aps.alert.title"),
            TemplateField("subtitle", "string", "APNs aps.alert.subtitle"),
            TemplateField("body", "string", requiredOn: [.fcm, .apns], "FCM adb_body; APNs aps.alert.body"),
            TemplateField("expandedTitle", "string", "APNs adb_title_ex"),
            TemplateField(
                "expandedBody", "string",
                features.contains(.expandedBodyOnAPNs)
                    ? "FCM and APNs adb_body_ex (FCM: defaults to body)" : "FCM adb_body_ex (defaults to body)"),
        ]
        if features.contains(.image) {
            list.append(TemplateField("image", "http(s) URL", "FCM adb_image; APNs adb_media"))
        }
        list += [
            TemplateField("link.uri", "string (URI)", "adb_uri (required when link is set)"),
            TemplateField("link.type", LinkType.wireValues.joined(separator: "|"), requiredOn: [.fcm], "FCM adb_a_type (required on FCM when link.uri is set)"),
            TemplateField("sound", "string", "FCM adb_sound; APNs aps.sound"),
            TemplateField("badge", "integer", "FCM adb_n_count; APNs aps.badge"),
            TemplateField("threadId", "string", "APNs aps.thread-id"),
            TemplateField("icon", "string", "FCM adb_icon (legacy small icon; ignored when smallIcon is set)"),
            TemplateField("smallIcon", "string", "FCM adb_small_icon"),
            TemplateField("largeIcon", "string", "FCM adb_large_icon"),
            TemplateField("channelId", "string", "FCM adb_channel_id"),
            TemplateField("notificationPriority", notificationPriorities.joined(separator: "|"), "FCM adb_n_priority"),
            TemplateField("tag", "string", "FCM adb_tag"),
            TemplateField("ticker", "string", "FCM adb_ticker"),
            TemplateField("sticky", "boolean", "FCM adb_sticky (\"true\"/\"false\")"),
            TemplateField("colors.title", "colour", "adb_clr_title (six hex digits, '#' stripped)"),
            TemplateField("colors.body", "colour", "adb_clr_body"),
            TemplateField("colors.background", "colour", "adb_clr_bg"),
            TemplateField("colors.smallIcon", "colour", "FCM adb_clr_icon"),
        ]
        if features.contains(.timerColor) {
            list.append(TemplateField("colors.timer", "colour", "adb_clr_tmr"))
        }
        return list
    }
}
