public import PipelineRuntime

/// The pipeline's counts (``PipelineRuntime/PipelineStatistics``) and, when given, the state of its run
/// (``PipelineRuntime/CampaignPipeline/Status``) in the Prometheus text exposition format (0.0.4).
///
/// Made from a snapshot when a scrape asks for it: counting costs the pipeline nothing more than the counts it keeps
/// for its run summary.
///
/// ```
/// # HELP campaign_pipeline_events_total Events read from the sends topic, by template and platform.
/// # TYPE campaign_pipeline_events_total counter
/// campaign_pipeline_events_total{template="basic",platform="fcm"} 1520
/// ```
public enum PrometheusText {
    /// The content type of the format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The metrics of `snapshot`, then the gauges of `status`. The snapshot's templates are registered ids or
    /// `unknown` (the pipeline counts an event naming any other template as `unknown`), so the input cannot grow the
    /// number of series.
    public static func render(_ snapshot: PipelineStatistics.Snapshot, status: CampaignPipeline.Status? = nil) -> String {
        var text = ""
        family(&text, "campaign_pipeline_events_total", "Events read from the sends topic, by template and platform.")
        for (labels, count) in byTemplateAndPlatform(snapshot.eventsIn) {
            sample(&text, "campaign_pipeline_events_total", labels, count)
        }
        family(
            &text,
            "campaign_pipeline_events_with_warnings_total",
            "Events rendered with a warning and handed to their sinks all the same (the log line 'Event rendered with warnings' says which), by template and platform."
        )
        // From 0 for each registered template and platform read, so that `increase()` sees the first warning.
        var warned = snapshot.eventsWithWarnings
        for key in snapshot.eventsIn.keys where !key.hasPrefix("unknown/") { warned[key, default: 0] += 0 }
        for (labels, count) in byTemplateAndPlatform(warned) {
            sample(&text, "campaign_pipeline_events_with_warnings_total", labels, count)
        }

        family(&text, "campaign_pipeline_outcomes_total", "Terminal outcomes written to the analytics topic and acknowledged, by type (one per event).")
        for kind in AnalyticsEvent.Kind.allCases {
            sample(&text, "campaign_pipeline_outcomes_total", "type=\"\(kind.rawValue)\"", snapshot.outcomes[kind] ?? 0)
        }

        family(&text, "campaign_pipeline_expired_total", "push.expired outcomes by cause (ttl: processed after expiresAt; timer: the countdown had ended).")
        for cause in AnalyticsEvent.ExpiryCause.allCases {
            sample(&text, "campaign_pipeline_expired_total", "cause=\"\(cause.rawValue)\"", snapshot.expiredByCause[cause] ?? 0)
        }

        let byReason = "outcomes by reason code (the analytics record's reason.code)."
        for (kind, name) in [(AnalyticsEvent.Kind.failed, "campaign_pipeline_failed_total"), (.rejected, "campaign_pipeline_rejected_total")] {
            let help = "\(kind.rawValue) \(byReason)"
            family(&text, name, help)
            let counts = snapshot.outcomeReasons[kind] ?? [:]
            // The codes are a fixed set (`SinkFailure.Code`, `PipelineError.Code`): every one is listed, from 0.
            for code in AnalyticsEvent.reasonCodes(of: kind) {
                sample(&text, name, "reason=\"\(code)\"", counts[code] ?? 0)
            }
        }

        family(&text, "campaign_pipeline_timer_expiries_total", "Timer expiries emitted after delivery (push.expired, cause timer, after a push.delivered).")
        sample(&text, "campaign_pipeline_timer_expiries_total", nil, snapshot.timersFired)

        family(&text, "campaign_pipeline_outputs_retried_total", "Outputs the cluster did not take at first, queued to be sent again.")
        sample(&text, "campaign_pipeline_outputs_retried_total", nil, snapshot.outputsRetried)

        family(&text, "campaign_pipeline_records_deleted_unread_total", "Records of the sends topic deleted before the pipeline read them (retention): no outcome.")
        sample(&text, "campaign_pipeline_records_deleted_unread_total", nil, snapshot.recordsDeletedUnread)

        let latency = "campaign_pipeline_outcome_latency_seconds"
        family(
            &text,
            latency,
            "Seconds from a send's record timestamp to its terminal outcome acknowledged by Kafka (one per event whose record has a timestamp; a send read again after a stop counts from its first writing).",
            type: "histogram"
        )
        for (bound, count) in snapshot.outcomeLatency.cumulativeCounts {
            sample(&text, "\(latency)_bucket", "le=\"\(bound == .infinity ? "+Inf" : "\(bound)")\"", count)
        }
        text += "\(latency)_sum \(snapshot.outcomeLatency.sum)\n"
        sample(&text, "\(latency)_count", nil, snapshot.outcomeLatency.count)

        guard let status else { return text }
        family(&text, "campaign_pipeline_ready", "1 while the instance consumes in its group (what /readyz answers 200 for), else 0.", type: "gauge")
        sample(&text, "campaign_pipeline_ready", nil, status.readiness == .ready ? 1 : 0)
        family(&text, "campaign_pipeline_assigned_partitions", "Partitions of the sends topic this instance reads.", type: "gauge")
        sample(&text, "campaign_pipeline_assigned_partitions", nil, status.assignedPartitions)
        family(&text, "campaign_pipeline_in_flight_events", "Events read whose outputs are not all acknowledged yet.", type: "gauge")
        sample(&text, "campaign_pipeline_in_flight_events", nil, status.inFlightEvents)
        if let lag = status.consumerLag {
            family(
                &text,
                "campaign_pipeline_consumer_lag",
                "Events of the sends topic's partitions this instance reads not finished yet, read or not, as measured every processing.progressLogSeconds.",
                type: "gauge"
            )
            sample(&text, "campaign_pipeline_consumer_lag", nil, lag)
        }
        family(
            &text,
            "campaign_pipeline_pending_timers",
            "Delivered timer notifications whose countdown has not ended, the whole group's (every instance keeps every partition's).",
            type: "gauge"
        )
        sample(&text, "campaign_pipeline_pending_timers", nil, status.pendingTimers)
        family(
            &text,
            "campaign_pipeline_paused_partitions",
            "Partitions this instance paused: their events wait on a throttled sink, or as many as processing.maxInFlightPerPartition are in flight.",
            type: "gauge"
        )
        sample(&text, "campaign_pipeline_paused_partitions", nil, status.pausedPartitions)
        family(&text, "campaign_pipeline_throttled_sinks", "Sinks (FCM, APNs) the platform throttles now; the partitions waiting on them are paused.", type: "gauge")
        sample(&text, "campaign_pipeline_throttled_sinks", nil, status.throttledSinks)
        return text
    }

    /// Counts keyed by `template/platform` (each part `unknown` when the event did not say; a platform has no `/`) as
    /// label sets, in order.
    private static func byTemplateAndPlatform(_ counts: [String: Int]) -> [(labels: String, count: Int)] {
        var byLabels: [String: Int] = [:]
        for (key, count) in counts {
            let slash = key.lastIndex(of: "/") ?? key.endIndex
            let template = String(key[..<slash])
            let platform = slash < key.endIndex ? String(key[key.index(after: slash)...]) : "unknown"
            byLabels["template=\"\(escaped(template))\",platform=\"\(platform)\"", default: 0] += count
        }
        return byLabels.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// `value` as a label value: backslash, double quote and line feed escaped.
    static func escaped(_ value: String) -> String {
        var result = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    private static func family(_ text: inout String, _ name: String, _ help: String, type: String = "counter") {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    private static func sample(_ text: inout String, _ name: String, _ labels: String?, _ value: Int) {
        text += labels.map { "\(name){\($0)} \(value)\n" } ?? "\(name) \(value)\n"
    }
}
