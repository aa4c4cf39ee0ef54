import CRdKafka
import Foundation

/// Reading the parts of a librdkafka message that both the consumer (records read) and the producer (records that
/// failed, handed back for another attempt) copy out.
enum RDKafkaMessage {
    /// The message's headers, in order.
    static func headers(of message: UnsafePointer<rd_kafka_message_t>) -> [KafkaHeader] {
        var headers: [KafkaHeader] = []
        var rawHeaders: OpaquePointer?
        guard rd_kafka_message_headers(message, &rawHeaders) == RD_KAFKA_RESP_ERR_NO_ERROR, let rawHeaders else { return [] }
        var index = 0
        var name: UnsafePointer<CChar>?
        var bytes: UnsafeRawPointer?
        var size = 0
        while rd_kafka_header_get_all(rawHeaders, index, &name, &bytes, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
            let value = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
            headers.append(KafkaHeader(key: name.map { String(cString: $0) } ?? "", value: value))
            index += 1
        }
        return headers
    }

    /// The message's timestamp, when it has one.
    static func timestamp(of message: UnsafePointer<rd_kafka_message_t>) -> Date? {
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let milliseconds = rd_kafka_message_timestamp(message, &timestampType)
        return milliseconds >= 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil
    }

    /// The message's key.
    static func key(of message: UnsafePointer<rd_kafka_message_t>) -> [UInt8]? {
        message.pointee.key.map { Array(UnsafeRawBufferPointer(start: $0, count: message.pointee.key_len)) }
    }

    /// The message's value (`nil` for a tombstone).
    static func value(of message: UnsafePointer<rd_kafka_message_t>) -> [UInt8]? {
        message.pointee.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: message.pointee.len)) }
    }
}
