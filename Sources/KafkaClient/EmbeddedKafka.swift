import CRdKafka
public import Logging
import Synchronization

/// A Kafka cluster inside this process: librdkafka's mock cluster, a real Kafka-protocol broker that other
/// processes (kcat, another pipeline) can reach on its bootstrap address.
///
/// It is the project's default broker for `make run` and for tests. Know its limits: it keeps about 5 MiB per
/// partition and silently drops older records beyond that, its first group join takes about 3 s, and it answers
/// offset look-ups by time with the end offset (``KafkaConsumer/offsets(forTimestamp:in:strategy:timeout:)``
/// works around that).
public final class EmbeddedKafka: Sendable {
    private struct Cluster: @unchecked Sendable {
        // `@unchecked Sendable`: librdkafka's mock-cluster API is thread-safe (every call is handed to the
        // cluster's own thread); the pointer is only used while the mutex is held.
        var pointer: OpaquePointer?
    }

    private let handle: RDKafkaHandle
    private let cluster: Mutex<Cluster>
    private let calls: MockClusterCalls
    /// The number of brokers in the cluster (ids 1...brokerCount).
    public let brokerCount: Int
    /// The `host:port,...` list clients connect to.
    public let bootstrapServers: String

    /// Starts a cluster of `brokers` brokers on loopback ports chosen by the system.
    ///
    /// - Throws: ``KafkaError/Code/embeddedBrokerFailed``.
    public init(brokers: Int = 1, logger: Logger) throws(KafkaError) {
        guard brokers >= 1 else {
            throw KafkaError(code: .embeddedBrokerFailed, message: "a cluster needs at least one broker, not \(brokers)")
        }
        var logger = logger
        logger[metadataKey: KafkaLoggingKeys.clientKind] = "embedded-broker"
        handle = try RDKafkaHandle(
            type: RD_KAFKA_PRODUCER,
            properties: [("client.id", "embedded-broker"), ("log_level", "4")],
            callbacks: RDKafkaCallbacks(logger: logger)
        )
        guard let cluster = rd_kafka_mock_cluster_new(handle.pointer, Int32(brokers)) else {
            throw KafkaError(code: .embeddedBrokerFailed, message: "librdkafka could not create a mock cluster")
        }
        self.cluster = Mutex(Cluster(pointer: cluster))
        self.brokerCount = brokers
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        self.calls = MockClusterCalls(bootstrapServers: bootstrapServers)
    }

    deinit {
        shutdown()
    }

    /// Creates a topic.
    ///
    /// - Throws: ``KafkaError/Code/embeddedBrokerFailed`` (for example a replication factor above the broker count).
    public func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32 = 1) throws(KafkaError) {
        let err = try withCluster { cluster in
            rd_kafka_mock_topic_create(cluster, name, partitions, min(replicationFactor, Int32(brokerCount)))
        }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.librdkafka(.embeddedBrokerFailed, err, topic: name)
        }
    }

    // Taking a broker down (rd_kafka_mock_broker_set_down) is not offered: librdkafka 2.0.2's mock cluster closes
    // the broker's listener and binds its port again at once, and aborts the whole process when that bind fails
    // (another socket took the port meanwhile, which the parallel test run made happen). `shutdown()` takes every
    // broker away for good.

    /// Makes `broker` the leader of a partition, or leaves the partition without a leader (`nil`): records for it
    /// wait, and fail once their `message.timeout.ms` passes, until it has one again.
    public func setLeader(of topic: String, partition: Int32, to broker: Int32?) throws(KafkaError) {
        let err = try withCluster { cluster in
            rd_kafka_mock_partition_set_leader(cluster, topic, partition, broker ?? -1)
        }
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            throw KafkaError.librdkafka(.embeddedBrokerFailed, err, message: "the leader of \(topic)/\(partition) could not be set", topic: topic)
        }
    }

    /// Makes the next `count` requests of the Kafka protocol request type `apiKey` (8 for OffsetCommit, 0 for
    /// Produce, …), to any broker, fail with the protocol error `errorCode` (30 for GROUP_AUTHORIZATION_FAILED, …).
    ///
    /// - Throws: ``KafkaError/Code/embeddedBrokerFailed`` when the cluster was shut down.
    public func failRequests(apiKey: Int16, count: Int, errorCode: Int32) throws(KafkaError) {
        let errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: errorCode), count: count)
        _ = try withCluster { cluster in
            errors.withUnsafeBufferPointer { errors in
                rd_kafka_mock_push_request_errors_array(cluster, apiKey, errors.count, errors.baseAddress)
            }
            return RD_KAFKA_RESP_ERR_NO_ERROR
        }
    }

    /// Stops the cluster; clients connected to it see the brokers disappear. Safe to call more than once.
    public func shutdown() {
        cluster.withLock { cluster in
            if let pointer = cluster.pointer {
                calls.destroy(pointer, keepingAlive: handle)
                cluster.pointer = nil
            }
        }
    }

    private func withCluster(
        _ body: (OpaquePointer) -> rd_kafka_resp_err_t
    ) throws(KafkaError) -> rd_kafka_resp_err_t {
        let code: Int32? = cluster.withLock { cluster in
            cluster.pointer.map { pointer in calls.run { body(pointer).rawValue } }
        }
        guard let code else {
            throw KafkaError(code: .embeddedBrokerFailed, message: "the embedded broker was shut down")
        }
        return rd_kafka_resp_err_t(rawValue: code)
    }
}
