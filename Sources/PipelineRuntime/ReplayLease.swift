import KafkaClient
public import Logging

/// One replay at a time in a replay group.
///
/// A replay reads the partitions of its range itself (it does not join its group: a group with members takes no
/// commits from a client outside it), so nothing in Kafka stops a second replay with the same group started while the
/// first runs; both would replay the range (with `--deliver`, send to phones twice). The lease is a consumer group
/// membership instead: the holder is the only member of a group of its own, ``leaseGroup(of:)``, subscribed to the two
/// topics a replay reads (the sends topic and the campaign definitions), and so is given every partition of both. The
/// group's assignor is `roundrobin`, which deals the partitions out one by one: with two members each is given at
/// least one of the two topics' partitions and neither all of them. A replay whose member is given fewer than all
/// knows that another member is there, and leaves. The member reads nothing: its partitions stay paused, and without
/// commits it would start at their end.
///
/// A holder whose member loses its place in the group (its session timed out: the process was stopped or paused, or
/// the coordinator was out of reach, for `session.timeout.ms`; or the coordinator dropped it during a rebalance) has
/// lost the lease, which a replay started meanwhile, alone in the group, may have taken. ``lost()`` returns then, and
/// the holder stops (a replay that goes on replays what the other replays too). A replay the lease group refuses for
/// good (no rights on it with ACLs, a session timeout outside the brokers' bounds, a member of another protocol, a full
/// group) fails at once, saying which.
///
/// A holder that was killed stays a member until its session times out (`session.timeout.ms`, 10 s by default). A
/// Kafka group coordinator then drops it, and a replay that started joining meanwhile takes the lease; the embedded
/// broker's coordinator can leave such a join unanswered, and the replay then fails after `limit` (run it again: the
/// member is gone by then). Two replays started at the same instant are both refused; neither replays.
///
/// (Not the `cooperative-sticky` assignor, which would leave a holder's partitions where they are: librdkafka before
/// 2.3 aborts the process when such a consumer closes before its first assignment, confluentinc/librdkafka#4312.)
public final class ReplayLease: Sendable {
    /// The replay group this lease is for.
    public let group: String
    /// The lease group member (internal for tests, which make it fail).
    let consumer: KafkaConsumer

    /// The lease member's id when the lease was taken.
    private let memberID: String

    private init(group: String, consumer: KafkaConsumer) {
        self.group = group
        self.consumer = consumer
        memberID = consumer.memberID
    }

    /// The consumer group whose member holds the lease of replay group `group`.
    public static func leaseGroup(of group: String) -> String { "\(group).replay-lease" }

    /// Joins the lease group of `group` and returns the lease when this is its only member.
    ///
    /// - Parameters:
    ///   - group: the replay's consumer group.
    ///   - configuration: the replay's configuration: the lease group subscribes to its sends and definitions topics,
    ///     with its client properties (TLS, SASL, …).
    ///   - limit: how long to wait for the group's answer (a new group's first join takes the broker's
    ///     `group.initial.rebalance.delay.ms`, 3 s by default; a killed holder's member is waited for until its session
    ///     times out).
    /// - Throws: ``ReplayGroupBusy`` when another member is in the lease group; ``KafkaError`` when the group does not
    ///   answer within `limit`, refuses its member for good (see above), or a topic cannot be looked up.
    public static func acquire(
        group: String,
        configuration: PipelineConfiguration,
        logger: Logger,
        within limit: Duration = .seconds(60)
    ) async throws -> ReplayLease {
        var consumerConfiguration = configuration.consumerConfiguration(groupID: leaseGroup(of: group), role: .replayLease)
        consumerConfiguration.isAutoCommitEnabled = false
        consumerConfiguration.offsetReset = .latest
        // Over the configuration's properties: the lease needs its assignor, and reads nothing from the past.
        consumerConfiguration.properties["partition.assignment.strategy"] = "roundrobin"
        consumerConfiguration.properties["auto.offset.reset"] = "latest"
        consumerConfiguration.properties["enable.auto.commit"] = "false"
        // Static membership would make every replay the same member: on a Kafka cluster a second would take the
        // first's place (the embedded broker has no static membership, so this is not tested here).
        consumerConfiguration.properties["group.instance.id"] = nil
        consumerConfiguration.bufferCapacity = 100
        let consumer = try KafkaConsumer(configuration: consumerConfiguration, logger: KafkaClientRole.replayLease.logger(logger))
        do {
            let topics = [configuration.topics.sends, configuration.topics.definitions]
            var partitions = 0
            for topic in topics { partitions += Int(try await consumer.partitionCount(topic: topic)) }
            consumer.stopReading()
            try consumer.subscribe(topics: topics)
            let held = try await firstAssignment(of: consumer, leaseGroup: leaseGroup(of: group), within: limit)
            guard held >= partitions else {
                throw ReplayGroupBusy(group: group, leaseGroup: leaseGroup(of: group), partitions: partitions, given: held)
            }
            return ReplayLease(group: group, consumer: consumer)
        } catch {
            await consumer.close()
            throw error
        }
    }

    /// Waits until the lease is lost, and says how: this replay's member lost its place in the lease group (its session
    /// timed out), so another replay may hold the lease now; or the member's consumer failed for good. Ordinary
    /// rebalances are not a loss: a replay that asks for the lease and is refused makes the holder's partitions move
    /// for a moment.
    ///
    /// Await it from one task, once: a call cancelled ends the lease's stream of events for later ones.
    ///
    /// - Returns: the loss; `nil` once the lease is released or the waiting task is cancelled.
    public func lost() async -> ReplayLeaseLost? {
        let consumer = self.consumer
        let group = self.group
        let member = memberName
        return await withTaskGroup(of: ReplayLeaseLost?.self) { tasks in
            tasks.addTask {
                for await event in consumer.events {
                    switch event {
                    case .partitionsLost:
                        // A session that timed out: the coordinator dropped the member (librdkafka rejoins by itself).
                        return ReplayLeaseLost(
                            group: group,
                            cause: "\(member) lost its place there (its session timed out: the process was stopped or paused, or the "
                                + "brokers were out of reach, for longer than session.timeout.ms)"
                        )
                    case .partitionsAssigned, .partitionsRevoked:
                        // Dropped during a rebalance (a join or sync answered that the member is unknown), librdkafka
                        // rejoins under a new id without reporting a loss.
                        if self.hasChangedMemberID {
                            return ReplayLeaseLost(
                                group: group,
                                cause: "\(member) lost its place there (the coordinator dropped it during a rebalance, and it joined again as a new member)"
                            )
                        }
                    case .error:
                        continue
                    }
                }
                return nil
            }
            tasks.addTask {
                // The member reads nothing: its records end only when it is closed, or with the error that ended it.
                do {
                    for try await _ in consumer.messages {}
                } catch {
                    return ReplayLeaseLost(group: group, cause: "\(member) failed: \(error)")
                }
                return nil
            }
            defer { tasks.cancelAll() }
            for await loss in tasks {
                if let loss { return loss }
            }
            return nil
        }
    }

    /// The loss of the lease as its member's id tells it now: `nil` while the member is the one that took the lease.
    /// Ask it before ``release()``: a member that left has no id. librdkafka forgets a member's id as soon as it finds
    /// its session timed out (it looks about once a second), before it reports the loss, and a member dropped during a
    /// rebalance joins again under a new id. For when ``lost()`` was not followed to its end: a replay that failed as
    /// it lost its lease (a look-up timed out across the same pause).
    public var lossByMemberID: ReplayLeaseLost? {
        guard hasChangedMemberID else { return nil }
        return ReplayLeaseLost(
            group: group,
            cause: "\(memberName) is no longer in it as the member that took the lease "
                + "(its session timed out: the process was stopped or paused, or the brokers were out of reach, for longer than "
                + "session.timeout.ms; or the coordinator dropped it)"
        )
    }

    /// How long librdkafka may take to find that a member's session timed out: it looks about once a second.
    public static let sessionCheckWait: Duration = .seconds(2)

    /// The loss of the lease as its member's id tells it within `limit`: asked now, and then every 200 ms until `limit`
    /// has passed (or the waiting task is cancelled). A run that ended soon after its process ran again (a look-up
    /// timed out across the pause, the range finished just after it) can end before librdkafka has found the timed-out
    /// session: such a run waits ``sessionCheckWait``. Ask it before ``release()``.
    public func loss(within limit: Duration) async -> ReplayLeaseLost? {
        let deadline = ContinuousClock.now + limit
        while true {
            if let lost = lossByMemberID { return lost }
            guard ContinuousClock.now < deadline else { return nil }
            do {
                try await Task.sleep(for: .milliseconds(200))
            } catch {
                return nil
            }
        }
    }

    /// Whether the lease member is no longer the member that took the lease: librdkafka forgot its id (a session that
    /// timed out, a member that left) or it joined again under a new one (dropped during a rebalance).
    private var hasChangedMemberID: Bool {
        !memberID.isEmpty && consumer.memberID != memberID
    }

    /// How the lease member is named in a loss.
    private var memberName: String { "its member of the lease group \(Self.leaseGroup(of: group))" }

    /// Leaves the lease group: another replay of the group may start. Waits at most 15 s for the group's coordinator
    /// (with the brokers gone, the member leaves when its session times out). A later call returns at once.
    public func release() async {
        await consumer.close(within: .seconds(15))
    }

    /// How many partitions `consumer` holds after the group's first answer.
    private static func firstAssignment(of consumer: KafkaConsumer, leaseGroup: String, within limit: Duration) async throws -> Int {
        try await withThrowingTaskGroup(of: Int?.self) { tasks in
            tasks.addTask {
                for await event in consumer.events {
                    switch event {
                    case .partitionsAssigned(let partitions):
                        // Eager (roundrobin): the first assignment is the whole of it.
                        return partitions.count
                    case .error(let error):
                        // librdkafka would go on asking; a replay does not wait for a refusal to end.
                        if let refusal = refusal(error, leaseGroup: leaseGroup) { throw refusal }
                    default:
                        continue
                    }
                }
                return nil
            }
            tasks.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { tasks.cancelAll() }
            guard let held = try await tasks.next() ?? nil else {
                throw KafkaError(
                    code: .consumerFailed,
                    message: "the replay's lease group \(leaseGroup) did not answer within \(limit.components.seconds) s (a replay "
                        + "of the group killed in the last seconds leaves a member there until its session times out); run the "
                        + "replay again"
                )
            }
            return held
        }
    }
}

extension ReplayLease {
    /// The error a replay fails with at once when the lease group refuses its member (`error`
    /// ``KafkaError/isGroupRefusal``): a replay does not wait for such a refusal to end, it is run again; `nil` for
    /// any other error (the brokers out of reach, …), which librdkafka retries until the limit of
    /// ``acquire(group:configuration:logger:within:)``.
    static func refusal(_ error: KafkaError, leaseGroup: String) -> KafkaError? {
        let message: String
        switch error.librdkafkaName {
        case "GROUP_AUTHORIZATION_FAILED":
            message = "the replay may not use its lease group \(leaseGroup) (\(error.message)): on a cluster with ACLs, the "
                + "principal of a replay with --group needs the group \(leaseGroup) too (Read and Describe, as on its own group)"
        case "INCONSISTENT_GROUP_PROTOCOL":
            message = "the replay's lease group \(leaseGroup) has a member that is not a replay's lease (\(error.message)): another "
                + "client uses that group with another protocol; groups named after a replay group with \".replay-lease\" are "
                + "the replays' own"
        case "GROUP_MAX_SIZE_REACHED":
            message = "the replay's lease group \(leaseGroup) is full (\(error.message)): the brokers' group.max.size admits no "
                + "other member, so another replay of the group, or another client in its lease group, is there"
        case _ where error.isGroupRefusal:
            message = "the replay's lease group \(leaseGroup) refuses its member (\(error.message)): "
                + GroupRefusal.advice(for: error, group: leaseGroup)
        default:
            return nil
        }
        return KafkaError(code: .consumerFailed, message: message, librdkafkaName: error.librdkafkaName)
    }
}

/// Another replay runs in the replay group (or one that ended without leaving it, until its session times out).
public struct ReplayGroupBusy: Error, Sendable, CustomStringConvertible {
    /// The replay's consumer group.
    public var group: String
    /// The group of the lease (``ReplayLease/leaseGroup(of:)``).
    public var leaseGroup: String
    /// The partitions of the topics the lease group subscribes to.
    public var partitions: Int
    /// How many of them this replay's lease member was given.
    public var given: Int

    public var description: String {
        "another replay is running in --group \(group): its lease group \(leaseGroup) has another member (this replay's member was given "
            + "\(given) of its \(partitions) partitions). Wait for it to end, and run again with the same options to resume; "
            + "a replay that was killed stays a member until its session times out (session.timeout.ms, 10 s by default)"
    }
}

/// A replay lost its group's lease while it ran (``ReplayLease/lost()``): another replay of the group may have started
/// meanwhile.
public struct ReplayLeaseLost: Error, Sendable, CustomStringConvertible {
    /// The replay's consumer group.
    public var group: String
    /// How it was lost.
    public var cause: String

    public var description: String {
        "the replay lost its lease of --group \(group): \(cause); another replay of the group may have started meanwhile"
    }
}
