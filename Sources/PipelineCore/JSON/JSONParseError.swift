/// Why a byte sequence is not the JSON we accept, and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }

        /// The input ended inside a value.
        public static let unexpectedEndOfInput = Kind("unexpected end of input")
        /// A byte that cannot start or continue a value here.
        public static let unexpectedCharacter = Kind("unexpected character")
        /// A malformed or non-finite number.
        public static let invalidNumber = Kind("invalid number")
        /// A backslash escape other than the nine JSON allows.
        public static let invalidEscape = Kind("invalid escape sequence")
        /// A `\u` escape that is not four hex digits or is an unpaired surrogate.
        public static let invalidUnicodeEscape = Kind("invalid \\u escape")
        /// String bytes that are not valid UTF-8.
        public static let invalidUTF8 = Kind("invalid UTF-8")
        /// An unescaped control character (below U+0020) in a string.
        public static let controlCharacterInString = Kind("unescaped control character in string")
        /// Arrays and objects nested deeper than the parser's limit.
        public static let tooDeeplyNested = Kind("nesting too deep")
        /// The same key twice in one object.
        public static let duplicateKey = Kind("duplicate key")
        /// Something other than whitespace after the value.
        public static let trailingData = Kind("unexpected data after the value")
        /// A text of 4 GiB or more, beyond what ``JSONDocument`` indexes.
        public static let tooLarge = Kind("text too large to index")
        /// More values than ``JSONDocument``'s node buffer has room for: never thrown to callers (the text is then
        /// indexed again with room enough, or by the tree parser).
        static let tooManyNodes = Kind("more values than the node buffer holds")

        public var description: String { name }
    }

    /// The kind of problem.
    public var kind: Kind
    /// The byte offset, from the start of the input, where the problem was found.
    public var offset: Int

    /// Creates an error.
    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    public var description: String { "\(kind) at byte \(offset)" }
}
