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
    public var title: ContentText?
    /// `subtitle` → APNs `aps.alert.subtitle`.
    public var subtitle: ContentText?
    /// `body` → FCM `adb_body`, APNs `aps.alert.body` (required).
    public var body: ContentText?
    /// `expandedTitle` → APNs `adb_title_ex`.
    public var expandedTitle: ContentText?
    /// `expandedBody` → `adb_body_ex` (FCM; APNs with ``Features/expandedBodyOnAPNs``).
    public var expandedBody: ContentText?
    /// `image` → FCM `adb_image`, APNs `adb_media` (with ``Features/image``).
    public var image: ContentText?
    /// `link` → `adb_uri` (+ FCM `adb_a_type`).
    public var link: Link?
    /// `sound` → FCM `adb_sound`, APNs `aps.sound`.
    public var sound: ContentText?
    /// `badge` → FCM `adb_n_count` (string), APNs `aps.badge` (number).
    public var badge: Int?
    /// `threadId` → APNs `aps.thread-id`.
    public var threadId: ContentText?
    /// `icon` → FCM `adb_icon` (the legacy small icon).
    public var icon: ContentText?
    /// `smallIcon` → FCM `adb_small_icon`.
    public var smallIcon: ContentText?
    /// `largeIcon` → FCM `adb_large_icon`.
    public var largeIcon: ContentText?
    /// `channelId` → FCM `adb_channel_id` (non-empty).
    public var channelId: ContentText?
    /// `notificationPriority` → FCM `adb_n_priority` (one of ``notificationPriorities``).
    public var notificationPriority: String?
    /// `tag` → FCM `adb_tag`.
    public var tag: ContentText?
    /// `ticker` → FCM `adb_ticker`.
    public var ticker: ContentText?
    /// `sticky` → FCM `adb_sticky` (`"true"`/`"false"`).
    public var sticky: Bool?
    /// `colors`, six hex digits each, without `#`.
    public var colors = Colors()
    /// The features this value was read with.
    public let features: Features

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
    public init(reading content: FieldReader, platform: Platform, features: Features, guidelines: TextGuidelines) {
        // Made empty, then filled in place: written as one initializer, the fields were built in a temporary and
        // copied out at the end (a retain and a release per field, seen in the compiled code).
        self.init(features: features)
        read(content, platform: platform, guidelines: guidelines)
    }

    private init(features: Features) {
        self.features = features
    }

    private mutating func read(_ content: FieldReader, platform: Platform, guidelines: TextGuidelines) {
        version = content.string("version", personalize: false) ?? "1"
        title = content.text("title", required: true)
        subtitle = content.text("subtitle")
        body = content.text("body", required: true)
        expandedTitle = content.text("expandedTitle")
        expandedBody = content.text("expandedBody")
        if features.contains(.image) { image = content.text("image") }
        if let linkReader = content.object("link") {
            let uri = linkReader.text("uri", required: true)
            let type = linkReader.choice("type", from: LinkType.wireValues, required: platform == .fcm && uri != nil)
            if let uri { link = Link(uri: uri, type: type.flatMap(LinkType.init)) }
        }
        sound = content.text("sound")
        badge = content.integer("badge", in: 0...Int(Int32.max))
        threadId = content.text("threadId")
        icon = content.text("icon")
        smallIcon = content.text("smallIcon")
        largeIcon = content.text("largeIcon")
        channelId = content.text("channelId")
        if channelId?.isEmpty == true {
            content.addIssue(.invalidField, "channelId", "must not be empty (the Android SDK would use an empty channel id as is)")
            channelId = nil
        }
        notificationPriority = content.choice("notificationPriority", from: Self.notificationPriorities)
        tag = content.text("tag")
        ticker = content.text("ticker")
        sticky = content.boolean("sticky")
        if let colorReader = content.object("colors") {
            colors.title = colorReader.color("title")
            colors.body = colorReader.color("body")
            colors.background = colorReader.color("background")
            colors.smallIcon = colorReader.color("smallIcon")
            if features.contains(.timerColor) { colors.timer = colorReader.color("timer") }
        }
        if icon != nil, smallIcon != nil {
            content.addWarning("icon", "ignored by the Android SDK when smallIcon is set")
        }
        TextGuidelines.check(title, limit: guidelines.title, key: "title", platform: platform, in: content)
        TextGuidelines.check(body, limit: guidelines.body, key: "body", platform: platform, in: content)
    }

    /// The FCM `data` members for these fields, in a fixed order, all strings.
    ///
    /// `adb_body_ex` falls back to the body: the Android SDK's expanded layout shows only
    /// `adb_body_ex`, so without it the expanded notification has no body text.
    public func fcmData(templateType: String) -> PayloadObject {
        // These 23 keys and the template's own: one allocation each for the bytes and the members' places.
        var data = PayloadObject(reservingBytes: 1536, members: 32)
        data.appendNew(Keys.adbVersion, version)
        data.appendNew(Keys.adbTemplateType, templateType)
        data.appendNew(Keys.adbTitle, title)
        data.appendNew(Keys.adbBody, body)
        data.appendNew(Keys.adbBodyEx, expandedBody ?? body)
        data.appendNew(Keys.adbSound, sound)
        data.appendNew(Keys.adbIcon, icon)
        data.appendNew(Keys.adbSmallIcon, smallIcon)
        data.appendNew(Keys.adbLargeIcon, largeIcon)
        data.appendNew(Keys.adbNCount, badge.map(String.init))
        data.appendNew(Keys.adbNPriority, notificationPriority)
        data.appendNew(Keys.adbChannelId, channelId)
        data.appendNew(Keys.adbImage, image)
        data.appendNew(Keys.adbUri, link?.uri)
        data.appendNew(Keys.adbAType, link?.type?.rawValue)
        data.appendNew(Keys.adbTag, tag)
        data.appendNew(Keys.adbSticky, sticky.map { $0 ? "true" : "false" })
        data.appendNew(Keys.adbTicker, ticker)
        data.appendNew(Keys.adbClrTitle, colors.title)
        data.appendNew(Keys.adbClrBody, colors.body)
        data.appendNew(Keys.adbClrBg, colors.background)
        data.appendNew(Keys.adbClrIcon, colors.smallIcon)
        data.appendNew(Keys.adbClrTmr, colors.timer)
        return data
    }

    /// The APNs `aps` members (`alert`, `sound`, `badge`, `thread-id`) for these fields.
    public func apnsAps() -> PayloadObject {
        // Room for these four, and `category` and `mutable-content` added by the registry.
        var aps = PayloadObject(reservingBytes: (title?.utf8Count ?? 0) + (subtitle?.utf8Count ?? 0) + (body?.utf8Count ?? 0) + 192, members: 4)
        aps.appendNew(Keys.alert) { alert in
            alert.member("title", text: title)
            alert.member("subtitle", text: subtitle)
            alert.member("body", text: body)
        }
        aps.appendNew(Keys.sound, sound)
        aps.set("badge", badge)
        aps.appendNew(Keys.threadId, threadId)
        return aps
    }

    /// The APNs top-level `adb_*` members for these fields, in a fixed order.
    public func apnsFields(templateType: String) -> PayloadObject {
        // These ten and the template's own: one allocation each for the bytes and the members' places.
        var fields = PayloadObject(reservingBytes: 1024, members: 16)
        fields.appendNew(Keys.adbTemplateType, templateType)
        fields.appendNew(Keys.adbVersion, version)
        fields.appendNew(Keys.adbTitleEx, expandedTitle)
        if features.contains(.expandedBodyOnAPNs) { fields.appendNew(Keys.adbBodyEx, expandedBody) }
        fields.appendNew(Keys.adbMedia, image)
        fields.appendNew(Keys.adbUri, link?.uri)
        fields.appendNew(Keys.adbClrTitle, colors.title)
        fields.appendNew(Keys.adbClrBody, colors.body)
        fields.appendNew(Keys.adbClrBg, colors.background)
        fields.appendNew(Keys.adbClrTmr, colors.timer)
        return fields
    }

    /// The members' names, written once (quoted, with their colon) instead of for every payload.
    private enum Keys {
        static let adbAType = PayloadObject.MemberName("adb_a_type")
        static let adbBody = PayloadObject.MemberName("adb_body")
        static let adbBodyEx = PayloadObject.MemberName("adb_body_ex")
        static let adbChannelId = PayloadObject.MemberName("adb_channel_id")
        static let adbClrBg = PayloadObject.MemberName("adb_clr_bg")
        static let adbClrBody = PayloadObject.MemberName("adb_clr_body")
        static let adbClrIcon = PayloadObject.MemberName("adb_clr_icon")
        static let adbClrTitle = PayloadObject.MemberName("adb_clr_title")
        static let adbClrTmr = PayloadObject.MemberName("adb_clr_tmr")
        static let adbIcon = PayloadObject.MemberName("adb_icon")
        static let adbImage = PayloadObject.MemberName("adb_image")
        static let adbLargeIcon = PayloadObject.MemberName("adb_large_icon")
        static let adbMedia = PayloadObject.MemberName("adb_media")
        static let adbNCount = PayloadObject.MemberName("adb_n_count")
        static let adbNPriority = PayloadObject.MemberName("adb_n_priority")
        static let adbSmallIcon = PayloadObject.MemberName("adb_small_icon")
        static let adbSound = PayloadObject.MemberName("adb_sound")
        static let adbSticky = PayloadObject.MemberName("adb_sticky")
        static let adbTag = PayloadObject.MemberName("adb_tag")
        static let adbTemplateType = PayloadObject.MemberName("adb_template_type")
        static let adbTicker = PayloadObject.MemberName("adb_ticker")
        static let adbTitle = PayloadObject.MemberName("adb_title")
        static let adbTitleEx = PayloadObject.MemberName("adb_title_ex")
        static let adbUri = PayloadObject.MemberName("adb_uri")
        static let adbVersion = PayloadObject.MemberName("adb_version")
        static let alert = PayloadObject.MemberName("alert")
        static let sound = PayloadObject.MemberName("sound")
        static let threadId = PayloadObject.MemberName("thread-id")
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
            list.append(TemplateField("image", "string (URI)", "FCM adb_image; APNs adb_media"))
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
