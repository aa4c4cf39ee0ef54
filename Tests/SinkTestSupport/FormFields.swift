/// Parses an application/x-www-form-urlencoded body, such as an OAuth token request.
///
/// "+" decodes to a space and "%XX" escapes to their bytes. When a name repeats, the first value wins.
/// A field without "=" has an empty value. Undecodable escapes are kept as written.
///
/// - Parameter body: The request body, e.g.
///   `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=…`.
/// - Returns: The fields by name.
public func formFields(_ body: [UInt8]) -> [String: String] {
    var fields: [String: String] = [:]
    for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
        let name: ArraySlice<UInt8>
        let value: ArraySlice<UInt8>
        if let equals = pair.firstIndex(of: UInt8(ascii: "=")) {
            name = pair[pair.startIndex..<equals]
            value = pair[(equals + 1)...]
        } else {
            name = pair
            value = []
        }
        let decodedName = decodeFormComponent(name)
        if fields[decodedName] == nil {
            fields[decodedName] = decodeFormComponent(value)
        }
    }
    return fields
}

private func decodeFormComponent(_ bytes: ArraySlice<UInt8>) -> String {
    var decoded: [UInt8] = []
    decoded.reserveCapacity(bytes.count)
    var index = bytes.startIndex
    while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == UInt8(ascii: "+") {
            decoded.append(UInt8(ascii: " "))
        } else if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
            let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
        {
            decoded.append(high << 4 | low)
            index += 2
        } else {
            decoded.append(byte)
        }
        index += 1
    }
    return String(decoding: decoded, as: UTF8.self)
}

private func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
