@testable import KafkaClient
import Testing

/// Timeouts as librdkafka's calls take them.
@Suite("librdkafka timeouts")
struct LibrdkafkaTimeoutTests {
    /// librdkafka 1.6.0 to 2.0.2 took a seek's remaining milliseconds as microseconds (confluentinc/librdkafka#4230,
    /// fixed in 2.0.3): a seek given 10 s waited 10 ms, then failed with `_TIMED_OUT` and was not recorded as the
    /// partitions' positions. Debian bookworm's librdkafka is 2.0.2.
    @Test("a seek's timeout is given a thousand times over to the releases that wait a thousandth of it")
    func seekTimeoutPerRelease() {
        let release202: Int32 = 0x0200_02ff
        let release203: Int32 = 0x0200_03ff
        let release160: Int32 = 0x0106_00ff
        #expect(Duration.seconds(10).seekTimeoutMilliseconds(librdkafkaVersion: release202) == 10_000_000)
        #expect(Duration.seconds(10).seekTimeoutMilliseconds(librdkafkaVersion: release160) == 10_000_000)
        #expect(Duration.seconds(10).seekTimeoutMilliseconds(librdkafkaVersion: release203) == 10_000)
        #expect(Duration.seconds(10).seekTimeoutMilliseconds(librdkafkaVersion: 0x020C_00ff) == 10_000)
        // Zero asks for no wait at all (the seek is started and not waited for) on every release.
        #expect(Duration.zero.seekTimeoutMilliseconds(librdkafkaVersion: release202) == 0)
        // A timeout too long for librdkafka's `int` is its longest.
        #expect(Duration.seconds(30 * 86_400).seekTimeoutMilliseconds(librdkafkaVersion: release202) == Int32.max)
        #expect(Duration.seconds(30 * 86_400).seekTimeoutMilliseconds(librdkafkaVersion: release203) == Int32.max)
    }
}
