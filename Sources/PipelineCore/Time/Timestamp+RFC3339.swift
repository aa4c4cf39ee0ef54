/// Why a string is not an RFC 3339 date-time.
public struct RFC3339Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, e.g. `month 13 out of range`.
    public var reason: String
    public var description: String { reason }
}

extension Timestamp {
    /// Parses an RFC 3339 date-time: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    ///
    /// `T`/`Z` may be lower case; `T` may be a space (RFC 3339 §5.6 note). Up to nine fraction
    /// digits are kept (more are truncated). A leap second (`:60`) is accepted and counts as the
    /// first second of the next minute. Offsets are converted to UTC.
    ///
    /// - Throws: ``RFC3339Error`` naming the first problem.
    public init(rfc3339 text: String) throws(RFC3339Error) {
        // Read through the text's UTF-8 `Span`: no copy of the bytes (events carry one or two times each).
        try self.init(rfc3339UTF8: text.utf8.span)
    }

    /// ``init(rfc3339:)`` over the text's UTF-8 bytes (an event's date-time read in place from its document).
    init(rfc3339UTF8 bytes: Span<UInt8>) throws(RFC3339Error) {
        let length = bytes.count
        func byte(_ position: Int) -> UInt8 { bytes[position] }
        var index = 0

        func fail(_ reason: String) -> RFC3339Error {
            RFC3339Error(reason: "not an RFC 3339 date-time (\(reason)), e.g. 2026-11-20T10:00:00Z")
        }
        func digits(_ count: Int) -> Int? {
            guard index + count <= length else { return nil }
            var value = 0
            for offset in 0..<count {
                let digit = byte(index + offset)
                guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(digit - UInt8(ascii: "0"))
            }
            index += count
            return value
        }
        /// Passes the byte at `index` when it is `a`, `b` or `c` (compared as bytes: searching a `String`'s UTF-8
        /// view costs more than the rest of the parse).
        func expect(_ a: UInt8, _ b: UInt8? = nil, _ c: UInt8? = nil) -> Bool {
            guard index < length else { return false }
            let found = byte(index)
            guard found == a || found == b || found == c else { return false }
            index += 1
            return true
        }

        guard let year = digits(4), expect(UInt8(ascii: "-")), let month = digits(2), expect(UInt8(ascii: "-")), let day = digits(2) else {
            throw fail("expected YYYY-MM-DD")
        }
        guard expect(UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")) else { throw fail("expected 'T' after the date") }
        guard let hour = digits(2), expect(UInt8(ascii: ":")), let minute = digits(2), expect(UInt8(ascii: ":")), let second = digits(2) else {
            throw fail("expected HH:MM:SS")
        }
        guard (1...12).contains(month) else { throw fail("month \(month) out of range") }
        guard day >= 1, day <= Self.daysInMonth(year: year, month: month) else { throw fail("day \(day) out of range") }
        guard hour <= 23 else { throw fail("hour \(hour) out of range") }
        guard minute <= 59 else { throw fail("minute \(minute) out of range") }
        guard second <= 60 else { throw fail("second \(second) out of range") }

        var nanoseconds = 0
        if index < length, byte(index) == UInt8(ascii: ".") {
            index += 1
            var count = 0
            while index < length, byte(index) >= UInt8(ascii: "0"), byte(index) <= UInt8(ascii: "9") {
                if count < 9 { nanoseconds = nanoseconds * 10 + Int(byte(index) - UInt8(ascii: "0")) }
                count += 1
                index += 1
            }
            guard count > 0 else { throw fail("expected digits after '.'") }
            for _ in min(count, 9)..<9 { nanoseconds *= 10 }
        }

        var offsetSeconds = 0
        if expect(UInt8(ascii: "Z"), UInt8(ascii: "z")) {
            offsetSeconds = 0
        } else if index < length, byte(index) == UInt8(ascii: "+") || byte(index) == UInt8(ascii: "-") {
            let sign = byte(index) == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let offsetHour = digits(2), expect(UInt8(ascii: ":")), let offsetMinute = digits(2), offsetHour <= 23, offsetMinute <= 59
            else { throw fail("invalid UTC offset") }
            offsetSeconds = sign * (offsetHour * 3600 + offsetMinute * 60)
        } else {
            throw fail("expected 'Z' or a UTC offset like +02:00")
        }
        guard index == length else { throw fail("unexpected text after the time") }

        let days = Self.daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        self.init(secondsSince1970: seconds, nanoseconds: Int32(nanoseconds))
    }

    /// The RFC 3339 form in UTC, e.g. `2026-11-20T10:00:00Z`; the fraction is written only when
    /// non-zero, with trailing zeros dropped (`2026-11-20T10:00:00.25Z`).
    public var rfc3339: String {
        // Written as bytes and made a `String` once.
        var text: [UInt8] = []
        text.reserveCapacity(30)
        appendRFC3339(to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends ``rfc3339``'s text as UTF-8 (ASCII: digits, `-`, `:`, `T`, `.` and `Z`), without making a `String`:
    /// analytics and timer records carry one per event (``JSONWriter/member(_:timestamp:)``). In quotes when `quoted`
    /// (a JSON string: the text has nothing to escape). One reservation for the whole text.
    func appendRFC3339(to text: inout [UInt8], quoted: Bool = false) {
        let days = secondsSince1970 >= 0 ? secondsSince1970 / 86_400 : (secondsSince1970 - 86_399) / 86_400
        let secondOfDay = Int(secondsSince1970 - days * 86_400)
        let (year, month, day) = Self.civilFromDays(Int(days))
        // At most: quotes, a year of 20 digits and its sign, `-MM-DDTHH:MM:SS`, nine fraction digits and `.Z`.
        text.append(addingCapacity: 50) { output in
            if quoted { output.append(UInt8(ascii: "\"")) }
            if (0...9999).contains(year) {
                Self.writeTwoDigits(year / 100, to: &output)
                Self.writeTwoDigits(year % 100, to: &output)
            } else {
                Self.writePadded(year, width: 4, to: &output)
            }
            output.append(UInt8(ascii: "-"))
            Self.writeTwoDigits(month, to: &output)
            output.append(UInt8(ascii: "-"))
            Self.writeTwoDigits(day, to: &output)
            output.append(UInt8(ascii: "T"))
            Self.writeTwoDigits(secondOfDay / 3600, to: &output)
            output.append(UInt8(ascii: ":"))
            Self.writeTwoDigits(secondOfDay / 60 % 60, to: &output)
            output.append(UInt8(ascii: ":"))
            Self.writeTwoDigits(secondOfDay % 60, to: &output)
            if nanoseconds > 0 {
                output.append(UInt8(ascii: "."))
                var fraction = Int(nanoseconds)
                var width = 9
                while fraction % 10 == 0 {
                    fraction /= 10
                    width -= 1
                }
                Self.writePadded(fraction, width: width, to: &output)
            }
            output.append(UInt8(ascii: "Z"))
            if quoted { output.append(UInt8(ascii: "\"")) }
        }
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian; H. Hinnant's days-from-civil algorithm)

    static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Writes `value` (0 to 99) as two digits: the month, day, hour, minute and second, and the year's two halves.
    @inline(__always)
    private static func writeTwoDigits(_ value: Int, to output: inout OutputSpan<UInt8>) {
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }

    /// Writes `value`'s decimal digits, left-padded with zeros to `width` (more digits when it has more; a minus sign
    /// first when negative).
    private static func writePadded(_ value: Int, width: Int, to output: inout OutputSpan<UInt8>) {
        if value < 0 { output.append(UInt8(ascii: "-")) }
        // The digits, last first (an `Int` has at most 20).
        var digits = InlineArray<20, UInt8>(repeating: 0)
        var count = 0
        var rest = value.magnitude
        repeat {
            digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            count += 1
        } while rest > 0
        for _ in count..<max(count, width) { output.append(UInt8(ascii: "0")) }
        for position in (0..<count).reversed() { output.append(digits[position]) }
    }
}
