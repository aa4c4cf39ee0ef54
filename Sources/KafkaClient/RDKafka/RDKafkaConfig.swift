import CRdKafka

/// Builds an `rd_kafka_conf_t` from a property list, failing on the first property librdkafka refuses.
enum RDKafkaConfig {
    /// Creates a configuration object. The caller owns it until it passes it to `rd_kafka_new`.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the property and librdkafka's reason.
    static func make(_ properties: [(key: String, value: String)]) throws(KafkaError) -> OpaquePointer {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(code: .clientCreationFailed, message: "rd_kafka_conf_new returned NULL")
        }
        var errorText = [CChar](repeating: 0, count: 512)
        for (key, value) in properties {
            let result = rd_kafka_conf_set(conf, key, value, &errorText, errorText.count)
            guard result == RD_KAFKA_CONF_OK else {
                rd_kafka_conf_destroy(conf)
                // librdkafka's reason repeats the value ("property 'x' = 'value': …"), and a value may be a secret
                // (a misspelt `sasl.password`): neither is put in the error, which ends up in logs.
                let text = String(decodingCString: errorText)
                // The value as librdkafka quotes it; unquoted only when long enough not to be a piece of the rest
                // ("value 0 is outside allowed range 1..3600000").
                var reason = value.isEmpty ? text : text.replacing("\"\(value)\"", with: "\"…\"")
                if value.count >= 4 { reason = reason.replacing(value, with: "…") }
                throw KafkaError(
                    code: .invalidConfiguration,
                    message: "property '\(key)' (value not shown): \(reason)"
                )
            }
        }
        return conf
    }

    /// Checks `properties` as ``make(_:)`` sets them (each name and value), and lets the configuration object go.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` naming the first property librdkafka refuses.
    static func check(_ properties: [(key: String, value: String)]) throws(KafkaError) {
        rd_kafka_conf_destroy(try make(properties))
    }

    /// Makes a client (a consumer, or a producer) from `properties` with no broker to reach, so that it connects
    /// nowhere, and destroys it: librdkafka checks properties against each other (`acks` with `enable.idempotence`,
    /// `max.poll.interval.ms` with `session.timeout.ms`, TLS files) only as it makes a client. It logs nothing
    /// meanwhile. Not with SASL's GSSAPI or OAUTHBEARER, whose clients fetch credentials as they are made (`kinit`, an
    /// OIDC token endpoint): those are checked when the real clients are made.
    ///
    /// - Throws: ``KafkaError/Code/invalidConfiguration`` with librdkafka's reason.
    static func checkClient(_ properties: [(key: String, value: String)], isConsumer: Bool) throws(KafkaError) {
        let mechanism = properties.last { $0.key == "sasl.mechanism" || $0.key == "sasl.mechanisms" }?.value.uppercased()
        if mechanism == "GSSAPI" || mechanism == "OAUTHBEARER" { return }
        let type = isConsumer ? RD_KAFKA_CONSUMER : RD_KAFKA_PRODUCER
        let conf = try make(properties.filter { $0.key != "bootstrap.servers" && $0.key != "metadata.broker.list" })
        rd_kafka_conf_set_log_cb(conf, nil)
        var errorText = [CChar](repeating: 0, count: 512)
        // On success rd_kafka_new takes ownership of conf; on failure it stays ours.
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: .invalidConfiguration, message: String(decodingCString: errorText))
        }
        rd_kafka_destroy_flags(handle, Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE))
    }
}

extension String {
    /// Decodes a NUL-terminated C string held in an array.
    init(decodingCString buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}

extension KafkaError {
    /// An error built from a librdkafka response code.
    static func librdkafka(
        _ code: KafkaError.Code,
        _ err: rd_kafka_resp_err_t,
        message: String? = nil,
        topic: String? = nil,
        partition: Int32? = nil
    ) -> KafkaError {
        let name = String(cString: rd_kafka_err2name(err))
        let text = message ?? String(cString: rd_kafka_err2str(err))
        return KafkaError(
            code: code,
            message: text,
            librdkafkaName: name,
            topic: topic,
            partition: partition,
            isRetriable: err.isRetriable
        )
    }

    /// An error built from a librdkafka error object, which it destroys.
    static func consuming(_ code: KafkaError.Code, _ error: OpaquePointer, topic: String? = nil) -> KafkaError {
        defer { rd_kafka_error_destroy(error) }
        let err = rd_kafka_error_code(error)
        let isFatal = rd_kafka_error_is_fatal(error) != 0
        var result = KafkaError.librdkafka(
            isFatal ? .fatal : code,
            err,
            message: String(cString: rd_kafka_error_string(error)),
            topic: topic
        )
        result.isRetriable = rd_kafka_error_is_retriable(error) != 0
        return result
    }
}

extension rd_kafka_resp_err_t {
    /// Errors that a later retry may get past.
    var isRetriable: Bool {
        switch self {
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
            RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__QUEUE_FULL,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RD_KAFKA_RESP_ERR_NOT_COORDINATOR, RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
            true
        default:
            false
        }
    }
}
