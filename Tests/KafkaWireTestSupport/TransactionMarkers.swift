import Foundation
import NIOCore
import NIOPosix

/// Transaction markers written straight into a partition over the Kafka protocol, for tests on the embedded broker.
///
/// librdkafka's mock cluster runs transactions without writing their markers, so a topic there never ends in one,
/// while on a real cluster every transaction a producer commits or aborts ends in a marker: an offset that holds a
/// control record no consumer is given. The mock stores what a produce request carries as it is, so this sends a
/// Produce request (version 3) whose record batch is a control batch with one marker, as a transaction coordinator
/// would write it. The partition's high watermark moves past it; consumers read through it and never see it.
public enum TransactionMarkers {
    /// Which end of a transaction a marker records.
    public enum Kind: Int16, Sendable {
        case abort = 0
        case commit = 1
    }

    /// Appends a marker to `partition` of `topic`, trying each broker of `bootstrapServers` until the partition's
    /// leader takes it.
    ///
    /// - Parameters:
    ///   - kind: a commit or an abort marker.
    ///   - bootstrapServers: the cluster's brokers, `host:port` separated by commas.
    ///   - producerID: the producer the marker ends a transaction of.
    ///   - timeout: how long each broker has to connect and answer.
    /// - Returns: the marker's offset.
    /// - Throws: ``TransactionMarkerError`` naming the broker and the error when no broker took it.
    @discardableResult
    public static func append(
        _ kind: Kind,
        topic: String,
        partition: Int32,
        bootstrapServers: String,
        producerID: Int64 = 7_000,
        timeout: Duration = .seconds(10)
    ) async throws -> Int64 {
        let request = produceRequest(topic: topic, partition: partition, batch: controlBatch(kind, producerID: producerID))
        var failures: [String] = []
        for server in bootstrapServers.split(separator: ",") {
            guard let colon = server.lastIndex(of: ":"), let port = Int(server[server.index(after: colon)...]) else {
                throw TransactionMarkerError("'\(server)' is not host:port")
            }
            let host = String(server[..<colon])
            do {
                let response = try await exchange(request, host: host, port: port, timeout: timeout)
                let (errorCode, baseOffset) = try parseProduceResponse(response)
                if errorCode == 0 { return baseOffset }
                failures.append("\(server): Kafka error \(errorCode)")
            } catch {
                // A broker that is down or does not answer: the leader may be another.
                failures.append("\(server): \(error)")
            }
        }
        throw TransactionMarkerError("no broker took the marker for \(topic) [\(partition)]: \(failures.joined(separator: "; "))")
    }

    /// A record batch (magic 2) holding one control record: the marker's key (version, type) and value (version,
    /// coordinator epoch), with the transactional and control attributes set.
    static func controlBatch(_ kind: Kind, producerID: Int64) -> ByteBuffer {
        var record = ByteBuffer()
        record.writeInteger(Int8(0))  // attributes
        record.writeVarint(0)  // timestamp delta
        record.writeVarint(0)  // offset delta
        var key = ByteBuffer()
        key.writeInteger(Int16(0))  // version
        key.writeInteger(kind.rawValue)
        record.writeVarint(Int64(key.readableBytes))
        record.writeImmutableBuffer(key)
        var value = ByteBuffer()
        value.writeInteger(Int16(0))  // version
        value.writeInteger(Int32(0))  // coordinator epoch
        record.writeVarint(Int64(value.readableBytes))
        record.writeImmutableBuffer(value)
        record.writeVarint(0)  // headers

        // From the attributes on: what the CRC covers.
        var checked = ByteBuffer()
        checked.writeInteger(Int16(0x30))  // transactional (0x10) and control (0x20)
        checked.writeInteger(Int32(0))  // last offset delta
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        checked.writeInteger(now)  // base timestamp
        checked.writeInteger(now)  // max timestamp
        checked.writeInteger(producerID)
        checked.writeInteger(Int16(0))  // producer epoch
        checked.writeInteger(Int32(-1))  // base sequence
        checked.writeInteger(Int32(1))  // records
        checked.writeVarint(Int64(record.readableBytes))
        checked.writeImmutableBuffer(record)

        var batch = ByteBuffer()
        batch.writeInteger(Int64(0))  // base offset (the broker assigns it)
        batch.writeInteger(Int32(4 + 1 + 4 + checked.readableBytes))  // length of what follows this field
        batch.writeInteger(Int32(-1))  // partition leader epoch
        batch.writeInteger(Int8(2))  // magic
        batch.writeInteger(CRC32C.checksum(checked.readableBytesView))
        batch.writeImmutableBuffer(checked)
        return batch
    }

    /// A Produce request (API key 0, version 3), size-prefixed, for one partition.
    static func produceRequest(topic: String, partition: Int32, batch: ByteBuffer) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Int16(0))  // API key: Produce
        body.writeInteger(Int16(3))  // API version
        body.writeInteger(Int32(1))  // correlation id
        body.writeKafkaString("transaction-marker-writer")  // client id
        body.writeInteger(Int16(-1))  // transactional id: null
        body.writeInteger(Int16(-1))  // acks: all
        body.writeInteger(Int32(10_000))  // timeout, ms
        body.writeInteger(Int32(1))  // topics
        body.writeKafkaString(topic)
        body.writeInteger(Int32(1))  // partitions
        body.writeInteger(partition)
        body.writeInteger(Int32(batch.readableBytes))
        body.writeImmutableBuffer(batch)
        var request = ByteBuffer()
        request.writeInteger(Int32(body.readableBytes))
        request.writeImmutableBuffer(body)
        return request
    }

    /// The error code and base offset of a Produce response (version 3) for one partition.
    static func parseProduceResponse(_ response: ByteBuffer) throws -> (errorCode: Int16, baseOffset: Int64) {
        var buffer = response
        guard
            let _ = buffer.readInteger(as: Int32.self),  // correlation id
            let topics = buffer.readInteger(as: Int32.self), topics == 1,
            let nameLength = buffer.readInteger(as: Int16.self), buffer.readSlice(length: Int(nameLength)) != nil,
            let partitions = buffer.readInteger(as: Int32.self), partitions == 1,
            let _ = buffer.readInteger(as: Int32.self),  // partition
            let errorCode = buffer.readInteger(as: Int16.self),
            let baseOffset = buffer.readInteger(as: Int64.self)
        else {
            throw TransactionMarkerError("could not read the Produce response: \(response.readableBytesView.map { $0 })")
        }
        return (errorCode, baseOffset)
    }

    /// Sends `request` to a broker and returns its response, without the size prefix. The connection is closed
    /// (and the exchange fails) when the broker has not answered within `timeout`.
    static func exchange(_ request: ByteBuffer, host: String, port: Int, timeout: Duration) async throws -> ByteBuffer {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(TimeAmount(timeout))
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let deadline = channel.channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
            channel.channel.close(promise: nil)
        }
        defer { deadline.cancel() }
        return try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(request)
            var received = ByteBuffer()
            for try await chunk in inbound {
                received.writeImmutableBuffer(chunk)
                if let size = received.getInteger(at: received.readerIndex, as: Int32.self), received.readableBytes >= 4 + Int(size) {
                    received.moveReaderIndex(forwardBy: 4)
                    return received.readSlice(length: Int(size))!
                }
            }
            throw TransactionMarkerError("\(host):\(port) closed the connection before answering")
        }
    }
}

/// Why a marker could not be written.
public struct TransactionMarkerError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension ByteBuffer {
    /// A Kafka `string`: its length as an int16, then its UTF-8 bytes.
    fileprivate mutating func writeKafkaString(_ text: String) {
        writeInteger(Int16(text.utf8.count))
        writeString(text)
    }

    /// A Kafka `varint`: zigzag, then seven bits at a time, lowest first.
    fileprivate mutating func writeVarint(_ value: Int64) {
        var zigzag = UInt64(bitPattern: (value << 1) ^ (value >> 63))
        while zigzag >= 0x80 {
            writeInteger(UInt8(truncatingIfNeeded: zigzag) | 0x80)
            zigzag >>= 7
        }
        writeInteger(UInt8(zigzag))
    }
}

/// CRC-32C (Castagnoli), the checksum of Kafka record batches.
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
