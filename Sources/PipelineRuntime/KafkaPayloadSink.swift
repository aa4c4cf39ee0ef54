import KafkaClient
import PipelineCore
import PushSinks

/// The Kafka sink: writes each rendered payload to its platform's payload topic (`push.fcm`, `push.apns`) with the
/// headers of the contract, for teams that run their own senders. Acknowledged = delivered; a record the cluster
/// refuses for good (too large, invalid) fails; everything else is retried by the ``OutputSender``.
struct KafkaPayloadSink: PushSink {
    let topic: String
    let sender: OutputSender
    /// `kafka:<topic>`, made once (outcomes name their sink for every event).
    let name: String

    var kind: String { "kafka" }

    /// The cluster is not a platform with a quota: the sink is never throttled (an unavailable cluster holds outputs
    /// back through the output sender's retries instead).
    var canBeThrottled: Bool { false }

    init(topic: String, sender: OutputSender) {
        self.topic = topic
        self.sender = sender
        self.name = "kafka:\(topic)"
    }

    /// Writes the payload. `isCancelled` is not asked: the cluster answers in moments, and a payload written for a
    /// partition that moved meanwhile is a duplicate with the same message id, as after any rebalance.
    func submit(
        _ notification: RenderedNotification,
        isCancelled: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SinkOutcome) -> Void
    ) async {
        await sender.send(OutputSender.Output(record: Self.record(notification, topic: topic), acknowledgement: .payload(completion)))
    }

    /// The payload record: key = recipient id, headers per the contract (APNs token and request headers too).
    static func record(_ notification: RenderedNotification, topic: String) -> KafkaProducerRecord {
        // Room for all of them at once (an APNs payload has up to five more): appending past a literal's three grew
        // the array, a second allocation.
        var headers: [KafkaHeader] = []
        headers.reserveCapacity(notification.platform == .apns ? 8 : 3)
        headers.append(KafkaHeader(key: "messageId", string: notification.messageId))
        headers.append(KafkaHeader(key: "campaignId", string: notification.request.campaignId))
        headers.append(KafkaHeader(key: "template", string: notification.templateID))
        if notification.platform == .apns {
            headers.append(KafkaHeader(key: "token", string: notification.token))
            notification.forEachHeader { name, value in headers.append(KafkaHeader(key: name, string: value)) }
        }
        return KafkaProducerRecord(
            topic: topic,
            key: Array(notification.recipientId.utf8),
            value: notification.payloadBytes,
            headers: headers
        )
    }
}
