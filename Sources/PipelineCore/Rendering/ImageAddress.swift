/// What the text of an image's address is, as ``FieldReader/imageURL(_:required:)-(FieldName,_)`` judges it: an
/// absolute `https` or `http` URL with a host (the scheme in any case), a text that begins with a placeholder (its
/// scheme is filled in from the recipient's attributes), or anything else.
enum ImageAddress: Equatable {
    case https
    case http
    case placeholder
    case invalid

    /// `https://` as ``SWAR/load(_:at:)`` reads it (the first byte lowest).
    private static let httpsWord: UInt64 = 0x2F2F_3A73_7074_7468
    /// `http://`, the seven low bytes.
    private static let httpWord: UInt64 = 0x2F_2F3A_7074_7468

    /// The address `text` (UTF-8) is. Read as one word for every image of every event: the eight bytes with every
    /// letter lowered, compared with the schemes.
    init(_ text: Span<UInt8>) {
        if text.count >= 2, text[0] == UInt8(ascii: "{"), text[1] == UInt8(ascii: "{") {
            self = .placeholder
            return
        }
        guard text.count >= 8 else {
            self = .invalid
            return
        }
        let word = SWAR.load(text, at: 0)
        // Setting each byte's 0x20 bit lowers a letter and leaves `:` and `/` as they are; of the other bytes only
        // control characters (0x1A, 0x0F) would become `:` or `/`, so they are ruled out first.
        let lowered = SWAR.hasControlCharacter(word) ? 0 : word | 0x2020_2020_2020_2020
        if lowered == Self.httpsWord, text.count > 8, Self.beginsHost(text[8]) {
            self = .https
        } else if lowered & 0x00FF_FFFF_FFFF_FFFF == Self.httpWord, Self.beginsHost(text[7]) {
            self = .http
        } else {
            self = .invalid
        }
    }

    /// Whether `byte`, right after `//`, can begin a host (it is not the path, query or fragment that follow one).
    private static func beginsHost(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: " "), 0x00..<0x20: false
        default: true
        }
    }
}
