import KafkaClient

/// What a consumer group's refusal (``KafkaError/isGroupRefusal``) asks of the user.
enum GroupRefusal {
    /// What to change so that `group` takes the member `error` refused, in words.
    static func advice(for error: KafkaError, group: String) -> String {
        switch error.librdkafkaName {
        case "GROUP_AUTHORIZATION_FAILED":
            "on a cluster with ACLs, the client's principal needs Read and Describe on the group \(group)"
        case "INVALID_SESSION_TIMEOUT":
            "session.timeout.ms in the Kafka properties must lie within the brokers' group.min.session.timeout.ms and "
                + "group.max.session.timeout.ms (6 s and 30 min by Kafka's defaults)"
        case "INCONSISTENT_GROUP_PROTOCOL":
            "a member of the group \(group) uses another protocol: give this deployment a group of its own (another client "
                + "uses the group), or change partition.assignment.strategy in two rolling steps (first list both assignors)"
        case "GROUP_MAX_SIZE_REACHED":
            "the group \(group) has as many members as the brokers' group.max.size admits: run fewer instances, or raise "
                + "group.max.size"
        default:
            "the brokers refuse the group \(group) this member"
        }
    }
}
