#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Timestamp {
    /// The wall-clock (real-time) instant now, to the nanosecond the system gives.
    public static func now() -> Timestamp {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Timestamp(secondsSince1970: Int64(time.tv_sec), nanoseconds: Int32(time.tv_nsec))
    }
}
