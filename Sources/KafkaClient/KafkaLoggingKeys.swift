/// Metadata keys this module puts on log lines.
enum KafkaLoggingKeys {
    static let facility = "kafka.facility"
    static let topic = "kafka.topic"
    static let partition = "kafka.partition"
    static let offset = "kafka.offset"
    static let groupID = "kafka.group.id"
    static let clientKind = "kafka.client"
    static let errorName = "kafka.error"
    /// On a line of librdkafka's own: how many lines of its facility were logged at debug since the last one at
    /// its level (``RepeatedLogLines``).
    static let omittedSinceLastLogged = "omittedSinceLastLogged"
}
