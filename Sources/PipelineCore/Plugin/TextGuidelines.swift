/// The specification's recommended maximum lengths (in characters) for title and body.
///
/// Exceeding them is a warning, never an error: the text may still display, depending on the device.
public struct TextGuidelines: Sendable, Hashable {
    /// Recommended maximum title length.
    public var title: Int
    /// Recommended maximum body (description) length.
    public var body: Int

    /// Creates guidelines.
    public init(title: Int, body: Int) {
        self.title = title
        self.body = body
    }

    /// FCM, every template: title ~35, description ~110.
    public static let fcm = TextGuidelines(title: 35, body: 110)
    /// APNs basic and carousel: title 70, description 600.
    public static let apns = TextGuidelines(title: 70, body: 600)
    /// APNs timer: title 50, description 450.
    public static let apnsTimer = TextGuidelines(title: 50, body: 450)

    /// ``check(_:limit:key:platform:in:)-(String?,_,_,_,_)`` for text read with ``FieldReader/text(_:required:personalize:)``
    /// (its characters are counted only when its bytes are more than `limit`).
    public static func check(_ text: ContentText?, limit: Int, key: String, platform: Platform, in reader: FieldReader) {
        // `text?.` reads the text in place; `guard let` would copy it (a reference count on its document).
        guard let byteCount = text?.utf8Count, byteCount > limit, let string = text?.string else { return }
        check(string, limit: limit, key: key, platform: platform, in: reader)
    }

    /// ``check(_:limit:key:platform:in:)-(ContentText?,_,_,_,_)`` for ``DocumentText`` of `source`.
    static func check(_ text: DocumentText?, from source: TextSource, limit: Int, key: String, platform: Platform, in reader: FieldReader) {
        guard let byteCount = text?.utf8Count(in: source), byteCount > limit, let string = text?.string(in: source) else { return }
        check(string, limit: limit, key: key, platform: platform, in: reader)
    }

    /// Adds a warning to `reader` for `key` when `text` is longer than `limit` characters.
    public static func check(_ text: String?, limit: Int, key: String, platform: Platform, in reader: FieldReader) {
        // A character is at least one UTF-8 byte: skip counting characters (slow) when the byte
        // count is already within the limit.
        guard let text, text.utf8.count > limit else { return }
        let count = text.count
        if count > limit {
            reader.addWarning(key, "\(count) characters; the \(platform) guideline is at most \(limit)")
        }
    }
}
