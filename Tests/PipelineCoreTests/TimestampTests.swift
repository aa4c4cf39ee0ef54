@testable import PipelineCore
import Testing

@Suite("RFC 3339 times")
struct TimestampTests {
    @Test(arguments: [
        ("1970-01-01T00:00:00Z", Int64(0), Int32(0)),
        ("2023-12-25T00:00:00Z", 1_703_462_400, 0),
        ("2023-12-25T01:30:00+01:30", 1_703_462_400, 0),
        ("2023-12-24T19:00:00-05:00", 1_703_462_400, 0),
        ("2026-11-20t10:00:00.5z", 1_795_168_800, 500_000_000),
        ("2026-11-20 10:00:00.123456789123Z", 1_795_168_800, 123_456_789),
        // Longer than the 40 bytes read inline.
        ("2026-11-20T11:00:00.12345678912345678912345+01:00", 1_795_168_800, 123_456_789),
        ("2000-02-29T23:59:59Z", 951_868_799, 0),
        ("1969-12-31T23:59:59Z", -1, 0),
        ("2016-12-31T23:59:60Z", 1_483_228_800, 0),
    ])
    func parses(_ text: String, _ seconds: Int64, _ nanos: Int32) throws {
        let time = try Timestamp(rfc3339: text)
        #expect(time == Timestamp(secondsSince1970: seconds, nanoseconds: nanos))
    }

    @Test(arguments: [
        "2023-12-25", "2023-12-25T00:00:00", "2023-13-01T00:00:00Z", "2023-02-29T00:00:00Z", "2023-04-31T00:00:00Z",
        "2023-12-25T24:00:00Z", "2023-12-25T00:60:00Z", "2023-12-25T00:00:61Z", "2023-12-25T00:00:00.Z",
        "2023-12-25T00:00:00+1:00", "2023-12-25T00:00:00Zjunk", "tomorrow", "", "2023-12-25T00:00:00+24:00",
        // A separator other than the ones allowed at its place.
        "2023/12/25T00:00:00Z", "2023-12-25X00:00:00Z", "2023-12-25T00.00:00Z", "2023-12-25T00:00:00z+01:00", "2023-12-25T00:00:00Y",
    ])
    func rejects(_ text: String) {
        #expect(throws: RFC3339Error.self) { try Timestamp(rfc3339: text) }
    }

    @Test func formatsInUTCWithMinimalFraction() throws {
        #expect(Timestamp(secondsSince1970: 1_703_462_400).rfc3339 == "2023-12-25T00:00:00Z")
        #expect(Timestamp(secondsSince1970: 0, nanoseconds: 250_000_000).rfc3339 == "1970-01-01T00:00:00.25Z")
        #expect(Timestamp(secondsSince1970: -1).rfc3339 == "1969-12-31T23:59:59Z")
        #expect(Timestamp(secondsSince1970: 1_703_462_400, nanoseconds: 5).rfc3339 == "2023-12-25T00:00:00.000000005Z")
        #expect(Timestamp(secondsSince1970: 1_703_462_400, nanoseconds: 120_000).rfc3339 == "2023-12-25T00:00:00.00012Z")
        #expect(Timestamp(secondsSince1970: 253_402_300_799).rfc3339 == "9999-12-31T23:59:59Z")
        #expect(Timestamp(secondsSince1970: -62_135_596_800).rfc3339 == "0001-01-01T00:00:00Z")
        // Before year 1 there is no RFC 3339 form; the year is written with its sign rather than garbled.
        #expect(Timestamp(secondsSince1970: -62_167_219_200 - 365 * 86_400).rfc3339 == "-0001-01-01T00:00:00Z")
        #expect(try Timestamp(rfc3339: "2024-02-29T12:34:56+02:00").rfc3339 == "2024-02-29T10:34:56Z")
    }

    @Test func roundTripsAcrossCenturies() throws {
        var seconds: Int64 = -2_208_988_800  // 1900
        while seconds < 7_258_118_400 {  // 2200
            let time = Timestamp(secondsSince1970: seconds)
            #expect(try Timestamp(rfc3339: time.rfc3339) == time)
            seconds += 7_776_013
        }
    }

    /// Written into a JSON writer without a `String`, a time is the member its ``Timestamp/rfc3339`` text makes.
    @Test func writesIntoJSONAsItsText() {
        var times = [Timestamp(secondsSince1970: -62_167_219_200 - 365 * 86_400), Timestamp(secondsSince1970: -1)]
        var seconds: Int64 = -2_208_988_800
        var nanoseconds: Int32 = 0
        while seconds < 7_258_118_400 {
            times.append(Timestamp(secondsSince1970: seconds, nanoseconds: nanoseconds))
            seconds += 7_776_013
            nanoseconds = (nanoseconds &* 31 &+ 123_457) % 1_000_000_000
        }
        for time in times {
            var direct = JSONWriter()
            direct.beginObject()
            direct.member("at", timestamp: time)
            direct.member("none", timestamp: nil)
            direct.endObject()
            var viaString = JSONWriter()
            viaString.beginObject()
            viaString.member("at", time.rfc3339)
            viaString.endObject()
            #expect(direct.bytes == viaString.bytes, "\(time.rfc3339)")
        }
    }

    /// Moving an instant by a duration carries nanoseconds across seconds both ways, and the duration between two
    /// instants moves one to the other.
    @Test func addingAndMeasuringDurations() {
        let time = Timestamp(secondsSince1970: 1_800_000_000, nanoseconds: 900_000_000)
        #expect(time.adding(.milliseconds(200)) == Timestamp(secondsSince1970: 1_800_000_001, nanoseconds: 100_000_000))
        #expect(time.adding(.zero - .milliseconds(950)) == Timestamp(secondsSince1970: 1_799_999_999, nanoseconds: 950_000_000))
        #expect(time.adding(.seconds(-3)) == Timestamp(secondsSince1970: 1_799_999_997, nanoseconds: 900_000_000))
        #expect(time.adding(.zero) == time)
        let earlier = Timestamp(secondsSince1970: 1_799_999_990, nanoseconds: 950_000_000)
        #expect(time.duration(since: earlier) == .milliseconds(9_950))
        #expect(earlier.duration(since: time) == .milliseconds(-9_950))
        #expect(earlier.adding(time.duration(since: earlier)) == time)
        #expect(time.adding(earlier.duration(since: time)) == earlier)
    }
}
