import KafkaClient
import PipelineCore
import PipelineRuntime
import Testing

@Suite("The state of a run, for the readiness check and the gauges")
struct PipelineStatusTests {
    @Test("starting, then ready with the group's partitions and pending timers, then stopping and stopped")
    func phases() async throws {
        try await withPipelineCluster(partitions: 4) { kafka, configuration in
            var configuration = configuration
            configuration.untilIdle = nil
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            #expect(pipeline.status.phase == .starting)
            #expect(pipeline.status.readiness == .notReady("starting"))

            let running = Task { try await pipeline.run() }
            do {
                let joined = try await eventually("the pipeline to join its group", timeout: clusterTimeout) {
                    pipeline.status.readiness == .ready ? pipeline.status : nil
                }
                #expect(joined.phase == .consuming)
                #expect(joined.hasJoinedGroup)
                #expect(joined.assignedPartitions == 4, "the only instance of the group reads every partition")

                // A delivered timer notification: its countdown (an hour) is pending, and nothing stays in flight.
                let event = JSONValue.object(try EventFactory().event("timer-fcm", id: "status-timer", recipient: "user-1")).encoded()
                try await produce([(key: "user-1", value: event)], to: configuration.topics.sends, kafka: kafka)
                let settled = try await eventually("the timer to be pending with nothing in flight", timeout: clusterTimeout) {
                    let status = pipeline.status
                    return status.pendingTimers == 1 && status.inFlightEvents == 0 ? status : nil
                }
                #expect(settled.readiness == .ready)
            } catch {
                pipeline.stop()
                _ = try? await running.value
                throw error
            }

            pipeline.stop()
            // Asked to stop: no longer ready while it drains and closes.
            #expect(pipeline.status.phase == .stopping)
            #expect(pipeline.status.readiness == .notReady("stopping"))
            try await running.value
            let stopped = pipeline.status
            #expect(stopped.phase == .stopped)
            #expect(stopped.readiness == .notReady("stopped"))
            #expect(stopped.assignedPartitions == 0 && !stopped.hasJoinedGroup && stopped.inFlightEvents == 0)
        }
    }

    /// Found by an operator's review: once joined, an instance answered ready for good, also after its session was
    /// lost and every partition taken away (the brokers unreachable), so an alert or a rollout gate on readiness
    /// missed it. The group's coordinator here forgets the member (a heartbeat answered UNKNOWN_MEMBER_ID, as after a
    /// session timeout): the instance is not ready until the group assigns it its partitions again.
    @Test("an instance that lost its place in the group is not ready until the group assigns it partitions again")
    func notReadyAfterLosingTheGroup() async throws {
        try await withPipelineCluster(partitions: 4) { kafka, configuration in
            var configuration = configuration
            configuration.untilIdle = nil
            let pipeline = CampaignPipeline(configuration: configuration, registry: builtinRegistry, logger: testLogger)
            try await whileRunning(pipeline) {
                _ = try await eventually("the pipeline to join its group", timeout: clusterTimeout) {
                    pipeline.status.readiness == .ready ? true : nil
                }
                // The next heartbeat (API key 12) is answered UNKNOWN_MEMBER_ID (25): the assignment is lost.
                try kafka.failRequests(apiKey: 12, count: 1, errorCode: 25)
                let lost = try await eventually("the instance to count itself out of the group", timeout: clusterTimeout, every: .milliseconds(10)) {
                    let status = pipeline.status
                    return status.readiness != .ready ? status : nil
                }
                #expect(lost.phase == .consuming && !lost.hasJoinedGroup, "\(lost)")
                #expect(lost.readiness == .notReady("not in the consumer group (joining, or lost its session)"))
                let back = try await eventually("the group to assign the partitions again", timeout: clusterTimeout) {
                    pipeline.status.readiness == .ready ? pipeline.status : nil
                }
                #expect(back.assignedPartitions == 4 && back.hasJoinedGroup)
            }
        }
    }
}
