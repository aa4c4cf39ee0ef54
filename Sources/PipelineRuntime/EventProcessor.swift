public import PipelineCore

/// Decides what happens to one input event, without touching Kafka: render it, or why not.
///
/// The decision depends only on the event bytes, the campaign table and the *decision time* (the wall clock
/// when streaming, the event's own time when replaying), so the same inputs always give the same decision.
public struct EventProcessor: Sendable {
    /// The outcome of processing one event.
    public enum Decision: Sendable {
        /// Send this payload; `timer` says when the notification's countdown ends, if it has one.
        case deliver(RenderedNotification, timer: TimerSchedule?)
        /// The event cannot be rendered; it goes to the dead-letter topic.
        case rejected(MessageIdentity, PipelineError)
        /// Not sent: processed after `expiresAt` (`ttl`) or its countdown already ended (`timer`).
        case expired(MessageIdentity, AnalyticsEvent.ExpiryCause, detail: String)
        /// Not sent: the campaign is cancelled.
        case suppressed(MessageIdentity)
        /// Not decided yet: the event has no content and the campaign table holds no definition of its campaign (or
        /// not the version it names), at any time. The campaign may have been defined an instant before
        /// the send, in a record the table has not read yet: the pipeline decides the event again once its table has
        /// read the definitions topic to its end, and rejects it with this error if the definition is still missing.
        case awaitingDefinition(MessageIdentity, PipelineError)
    }

    /// When a delivered timer notification's countdown ends.
    public enum TimerSchedule: Sendable, Hashable {
        /// At this instant (`adb_tmr_end`).
        case endsAt(Timestamp)
        /// This many seconds after delivery (`adb_tmr_dur`).
        case duration(seconds: Int64)
    }

    /// The registered templates.
    public let registry: TemplateRegistry

    /// Creates a processor over a registry.
    public init(registry: TemplateRegistry) {
        self.registry = registry
    }

    /// Decides one event.
    ///
    /// - Parameters:
    ///   - bytes: the record value.
    ///   - sourcePosition: `topic/partition@offset`, used for the message id of events without an id (made only
    ///     for those).
    ///   - campaigns: the campaign state.
    ///   - decisionTime: the instant expiry and cancellation are judged at; `nil` uses the event's own time.
    public func process(
        _ bytes: [UInt8],
        sourcePosition: @autoclosure () -> String,
        campaigns: CampaignTable,
        decisionTime: Timestamp?
    ) -> Decision {
        process(bytes, sourcePosition: sourcePosition(), campaigns: campaigns, decisionTime: decisionTime, scratch: RenderScratch())
    }

    /// ``process(_:sourcePosition:campaigns:decisionTime:)`` with the decoding and render state kept in `scratch`:
    /// a worker deciding event after event keeps one (``RenderScratch``).
    public func process(
        _ bytes: [UInt8],
        sourcePosition: @autoclosure () -> String,
        campaigns: CampaignTable,
        decisionTime: Timestamp?,
        scratch: RenderScratch
    ) -> Decision {
        let document: JSONDocument
        do throws(JSONParseError) {
            document = try JSONDocument(parsing: bytes)
        } catch {
            let failure = PipelineError(.invalidJSON, at: .root, "invalid JSON: \(error)")
            return .rejected(MessageIdentity(undecodable: nil, eventId: nil, sourcePosition: sourcePosition()), failure)
        }
        let request: PushRequest
        do throws(PipelineError) {
            request = try PushRequest(decoding: document, scratch: scratch)
        } catch {
            var identity = MessageIdentity(undecodable: document.value, eventId: error.eventId, sourcePosition: sourcePosition())
            // A registered template by its id, as the other outcomes name it (not the alias the event used).
            if let name = identity.template, let renderer = try? registry.renderer(named: name) { identity.template = renderer.templateID }
            return .rejected(identity, error)
        }
        let now = decisionTime ?? request.occurredAt
        // Made only for decisions that carry it: a rendered notification has its message id already (hashing it
        // again would cost as much as a tenth of the render).
        let registry = self.registry
        func identity() -> MessageIdentity {
            var identity = MessageIdentity(request: request)
            if let renderer = try? registry.renderer(named: request.template) { identity.template = renderer.templateID }
            return identity
        }

        if campaigns.isCancelled(request.campaignId, asOf: now) {
            return .suppressed(identity())
        }
        if let expiresAt = request.expiresAt, expiresAt <= now {
            return .expired(identity(), .ttl, detail: "processed at \(now.rfc3339), after expiresAt \(expiresAt.rfc3339)")
        }
        let content: CampaignContent
        do throws(PipelineError) {
            content = try campaigns.content(for: request, asOf: now, registry: registry)
        } catch {
            // Waiting for the table to read more can only help when it holds no such definition at all (a definition
            // of another template, or defined after the decision time, is held).
            if campaigns.holdsDefinition(of: request.campaignId, version: request.campaignVersion) {
                return .rejected(identity(), error)
            }
            return .awaitingDefinition(identity(), error)
        }
        let notification: RenderedNotification
        do throws(PipelineError) {
            notification = try registry.render(request, content: content, scratch: scratch)
        } catch {
            return .rejected(identity(), error)
        }
        let timer = Self.timerSchedule(of: notification)
        // Ended by the decision instant, or by the event's own time: a decision instant can be earlier than
        // `occurredAt` (a batch judged at the instant of one read just before it, or a producer's clock ahead).
        if case .endsAt(let end)? = timer, end <= now || end <= request.occurredAt {
            let identity = MessageIdentity(request: request, template: notification.templateID, messageId: notification.messageId)
            let detail =
                end <= now
                ? "the countdown ended at \(end.rfc3339), before processing at \(now.rfc3339)"
                : "the countdown ended at \(end.rfc3339), before the event's occurredAt \(request.occurredAt.rfc3339)"
            return .expired(identity, .timer, detail: detail)
        }
        return .deliver(notification, timer: timer)
    }

    /// Reads a timer notification's countdown from its payload (`adb_tmr_dur` wins over `adb_tmr_end`).
    static func timerSchedule(of notification: RenderedNotification) -> TimerSchedule? {
        if let duration = integer(notification.payloadMember("adb_tmr_dur")) { return .duration(seconds: duration) }
        if let end = integer(notification.payloadMember("adb_tmr_end")) { return .endsAt(Timestamp(secondsSince1970: end)) }
        return nil
    }

    private static func integer(_ value: JSONValue?) -> Int64? {
        switch value {
        case .string(let text)?: Int64(text)
        case .int(let number)?: Int64(number)
        default: nil
        }
    }
}
